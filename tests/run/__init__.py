"""Tests of `compare run`: planning, judging, evidence, detection, and whole runs on a cluster."""
