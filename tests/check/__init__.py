"""Tests of policies and `compare check`: schema, semantics and exit codes."""
