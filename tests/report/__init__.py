"""Tests of `compare report`: every format, the CLI, and the HTML in a real headless browser."""
