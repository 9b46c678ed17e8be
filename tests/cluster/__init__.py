"""Tests of the embedded control plane and the `compare cluster` commands."""
