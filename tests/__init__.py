"""The test suite: one embedded cluster per session (conftest.py), one namespace per test."""
