"""The `compare` command line: thin Typer commands that parse, call the core and print.

Only this package turns CompareError into a message and an exit code.
"""

# First: the consoles read the terminal's size when they are made (`terminal`).
from compare.cli import terminal  # noqa: F401  (bounds COLUMNS and LINES on import)
from compare.cli.app import app, main

__all__ = ["app", "main"]
