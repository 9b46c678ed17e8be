"""The `compare` command line: thin Typer commands that parse, call the core and print.

Only this package turns CompareError into a message and an exit code.
"""

from compare.cli.terminal import clamp_width

clamp_width()  # before any console reads the width (compare.cli.common makes them on import)

from compare.cli.app import app, main  # noqa: E402

__all__ = ["app", "main"]
