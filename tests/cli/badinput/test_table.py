"""Every bad input of the table (tests/cli/badinput/cases.py), run in-process through the CLI.

Each case asserts: the exit code, exactly one line on stderr naming the file or field (the
expected fragment), no traceback, nothing on stdout, and every file of the case left exactly
as it was (content, mode, no file added or removed: no half-written results or reports).
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from compare.cli import app
from tests.cli.badinput.cases import CASES, DEV_ZERO, DIRECTORY, FIFO, SYMLINK, Case

runner = CliRunner()


def materialize(case: Case, tmp: Path) -> None:
    for name, content in case.files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if content == FIFO:
            os.mkfifo(path)
        elif content == DIRECTORY:
            path.mkdir()
        elif content == DEV_ZERO:
            path.symlink_to("/dev/zero")
        elif isinstance(content, str) and content.startswith(SYMLINK):
            path.symlink_to(content.removeprefix(SYMLINK))
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, str):
            path.write_text(content)
        elif path.suffix == ".json":
            path.write_text(json.dumps(content))
        else:
            path.write_text(yaml.safe_dump(content))


def snapshot(tmp: Path) -> dict[str, Any]:
    """Every entry under tmp: its kind, mode and (for regular files) content digest."""
    state: dict[str, Any] = {}
    for path in sorted(tmp.rglob("*")):
        info = path.lstat()
        digest = None
        if stat.S_ISREG(info.st_mode):
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
        state[str(path.relative_to(tmp))] = (stat.S_IFMT(info.st_mode), info.st_mode, digest)
    return state


def _fill(text: str, tmp: Path) -> str:
    return text.replace("{tmp}", str(tmp))


def test_the_table_has_at_least_200_cases() -> None:
    assert len(CASES) >= 200
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_bad_input(case: Case, tmp_path: Path) -> None:
    tmp = tmp_path / "case"
    tmp.mkdir()
    materialize(case, tmp)
    before = snapshot(tmp)
    env = {key: None if value is None else _fill(value, tmp) for key, value in case.env.items()}
    result = runner.invoke(app, [_fill(arg, tmp) for arg in case.args], env=env)

    assert result.exit_code == case.exit_code, (result.exit_code, result.output)
    # A SystemExit is the CLI's exit code; any other exception escaped the error boundary.
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: "), lines[0]
    assert _fill(case.expected, tmp) in lines[0], lines[0]
    for fragment in case.also:
        assert _fill(fragment, tmp) in lines[0], lines[0]
    assert "Traceback" not in result.output
    assert result.stdout.strip() == ""
    assert snapshot(tmp) == before
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # a symlink to it was never written over
