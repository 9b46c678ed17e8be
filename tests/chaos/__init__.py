"""Tests of our chaostoolkit extension and the experiment catalogue (validate, discover, run)."""
