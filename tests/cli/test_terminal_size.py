"""No terminal size makes the CLI hang or flood (`compare.cli.terminal`): COLUMNS=99999999
padded every help line to that width (gigabytes, never ending)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compare.cli.terminal import MAX_COLUMNS, MAX_LINES, bound_terminal_size

COMPARE = str(Path(sys.executable).with_name("compare"))


@pytest.mark.parametrize("columns", ["99999999", "1" + "0" * 40])
def test_a_huge_terminal_width_is_bounded(columns: str) -> None:
    started = time.monotonic()
    done = subprocess.run(
        [COMPARE, "--help"],
        env={**os.environ, "COLUMNS": columns, "LINES": columns},
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 60
    lines = done.stdout.decode().splitlines()
    assert "Usage: compare" in done.stdout.decode()
    assert max(len(line) for line in lines) <= MAX_COLUMNS


def test_sizes_are_bounded_or_dropped() -> None:
    environ = {"COLUMNS": "99999999", "LINES": "5000", "OTHER": "x"}
    bound_terminal_size(environ)
    assert environ == {"COLUMNS": str(MAX_COLUMNS), "LINES": str(MAX_LINES), "OTHER": "x"}
    for bad in ("abc", "-5", "0", ""):
        environ = {"COLUMNS": bad}
        bound_terminal_size(environ)
        assert environ == {}
    environ = {"COLUMNS": "120"}
    bound_terminal_size(environ)
    assert environ == {"COLUMNS": "120"}
