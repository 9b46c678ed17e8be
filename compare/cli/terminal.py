"""The terminal's size as the CLI's consoles read it, bounded.

rich and Typer size their output from `COLUMNS` and `LINES`: a value of 99999999 made
`compare --help` pad every line to that width (gigabytes, never ending). A size beyond
`MAX_COLUMNS`/`MAX_LINES`, or one that is not a positive number, is set to the bound (or
dropped) before any console exists; nothing else of the environment is touched.
"""

from __future__ import annotations

import os
from collections.abc import MutableMapping

# Wider than any real terminal; the piped output's tables use 400 (`compare status`).
MAX_COLUMNS = 1000
MAX_LINES = 1000


def bound_terminal_size(environ: MutableMapping[str, str] = os.environ) -> None:
    for name, bound in (("COLUMNS", MAX_COLUMNS), ("LINES", MAX_LINES)):
        value = environ.get(name)
        if value is None:
            continue
        text = value.strip()
        if not text.isdigit() or int(text) == 0:
            del environ[name]  # not a size: the real terminal's is used
        elif int(text) > bound:
            environ[name] = str(bound)


bound_terminal_size()
