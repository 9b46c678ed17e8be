"""The `compare` command line: thin Typer commands that parse, call the core and print.

Only this package turns CompareError into a message and an exit code.
"""

from compare.cli.terminal import bound_terminal_size

bound_terminal_size()  # before any console reads the size (compare.cli.common makes them on import)

from compare.cli.app import app, main  # noqa: E402

__all__ = ["app", "main"]
