"""Tests of the results contract: the results.json model, its storage and its aggregates."""
