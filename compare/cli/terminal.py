"""The terminal as the CLI sees it: its width bounded before any console is made, and its
streams able to show any text.

Under LANG=C (or LC_ALL=C) stdout and stderr may be ASCII: a non-ASCII run id, app name or
path (`rün/`, given on the command line as undecodable bytes) made every print an "unexpected"
UnicodeEncodeError. Such characters are shown as backslash escapes instead (`r\\xfcn`).

rich and click size their output from COLUMNS (and typer's help from TERMINAL_WIDTH): a value
of 99999999 made `compare --help` pad every line to that width (gigabytes, a hang), 0 left no
room at all. A width outside 10..MAX_COLUMNS is clamped; anything else is left as it is.
"""

from __future__ import annotations

import os
import sys
from collections.abc import MutableMapping

MAX_COLUMNS = 1000
MIN_COLUMNS = 10


def clamp_width(environ: MutableMapping[str, str] | None = None) -> None:
    """Clamp COLUMNS and TERMINAL_WIDTH in `environ` (default: this process's) to the range."""
    env = os.environ if environ is None else environ
    for name in ("COLUMNS", "TERMINAL_WIDTH"):
        value = env.get(name, "").strip()
        if not value.lstrip("+-").isdigit():
            continue
        width = int(value)
        if not MIN_COLUMNS <= width <= MAX_COLUMNS:
            env[name] = str(min(max(width, MIN_COLUMNS), MAX_COLUMNS))


def printable_streams() -> None:
    """stdout and stderr write what their encoding cannot hold as backslash escapes."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="backslashreplace")
