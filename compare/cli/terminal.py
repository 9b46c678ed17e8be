"""The terminal as the CLI sees it: its size bounded before any console is made, and its
streams able to show any text.

rich and click size their output from `COLUMNS` and `LINES` (and Typer's help from
`TERMINAL_WIDTH`): a value of 99999999 made `compare --help` pad every line to that width
(gigabytes, never ending), 0 left no room at all. A width beyond `MAX_COLUMNS` is set to it, one
below `MIN_COLUMNS` to that, `LINES` beyond `MAX_LINES` to it; a value that is not a positive
number is dropped (the real terminal's size is used). Nothing else of the environment is
touched.

Under LANG=C (or LC_ALL=C) stdout and stderr may be ASCII: a non-ASCII run id, app name or
path made every print an "unexpected" UnicodeEncodeError. Such characters are shown as
backslash escapes instead (`r\\xfcn`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

# Wider than any real terminal; the piped output's tables use 400 (`compare status`).
MAX_COLUMNS = 1000
MIN_COLUMNS = 10
MAX_LINES = 1000
_BOUNDS = {
    "COLUMNS": (MIN_COLUMNS, MAX_COLUMNS),
    "TERMINAL_WIDTH": (MIN_COLUMNS, MAX_COLUMNS),
    "LINES": (1, MAX_LINES),
}


def bound_terminal_size(environ: MutableMapping[str, str] | None = None) -> None:
    """Bound COLUMNS, TERMINAL_WIDTH and LINES in `environ` (default: this process's)."""
    env = os.environ if environ is None else environ
    for name, (low, high) in _BOUNDS.items():
        value = env.get(name)
        if value is None:
            continue
        text = value.strip()
        if not text.isdigit() or int(text) == 0:
            del env[name]  # not a size: the real terminal's is used
        else:
            env[name] = str(min(max(int(text), low), high))


def printable_streams() -> None:
    """stdout and stderr write what their encoding cannot hold as backslash escapes."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
