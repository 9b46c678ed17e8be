"""The `compare` command line: thin Typer commands that parse, call the core and print.

Only this package turns CompareError into a message and an exit code.
"""

from compare.cli.app import app, main

__all__ = ["app", "main"]
