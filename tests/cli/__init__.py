"""Tests of the `compare` command line itself: what it imports, how it lists its commands."""
