"""The CLI's error boundary: any exception is one line (plus a log path), never a traceback;
error text is printed as text (rich markup never eats square brackets); and the real
terminal path (the installed `compare` script, a subprocess) behaves like the in-process one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import EXIT_INTERNAL
from compare.paths import EXPERIMENTS_DIR
from tests.results.helpers import fixture

runner = CliRunner()
COMPARE = Path(sys.executable).parent / "compare"


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def test_an_unexpected_exception_is_one_line_and_a_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("summary failed at [webapp] for '^([-a-z0-9]*)?$'\nsecond line")

    monkeypatch.setenv("COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr("compare.cli.report_cmd.summarize", broken)
    result = runner.invoke(app, ["report", str(fixture("single-trial"))])
    assert result.exit_code == EXIT_INTERNAL
    (line,) = _lines(result.stderr)
    assert line.startswith(
        "error: unexpected RuntimeError: summary failed at [webapp] for '^([-a-z0-9]*)?$'"
    )
    assert "Traceback" not in result.output and "second line" not in result.output
    log = Path(line.rsplit("(traceback in ", 1)[1].rstrip(")"))
    assert log.parent == tmp_path / "cache" / "logs"
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "second line" in text
    assert log.stat().st_mode & 0o077 == 0


def test_square_brackets_in_error_text_survive(tmp_path: Path) -> None:
    app_file = tmp_path / "app.yaml"
    app_file.write_text(
        "apiVersion: example.com/v1\nkind: WebApp\nmetadata: {name: Bad_Name}\n"
        "spec: {image: 'shop:v1', env: [{name: '1X'}]}\n"
    )
    result = runner.invoke(app, ["deploy", "helm", "--app", str(app_file)])
    assert result.exit_code == 2
    (line,) = _lines(result.stderr)
    assert "String should match pattern '^[a-z]([-a-z0-9]*[a-z0-9])?$'" in line, line


def _terminal(args: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "KUBECONFIG"}
    return subprocess.run(
        [str(COMPARE), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**env, "COMPARE_CACHE_DIR": str(tmp_path / "cache"), "COLUMNS": "200"},
        check=False,
    )


def test_real_terminal_path_has_no_traceback(tmp_path: Path) -> None:
    fifo = tmp_path / "app.yaml"
    os.mkfifo(fifo)  # no writer: reading it would block forever
    experiment = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    experiment["extensions"][0]["evidence"] = "deployment"
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps(experiment))
    nowhere = ["--kubeconfig", str(tmp_path / "no-cluster")]
    cases = [
        (["deploy", "helm", "--app", str(fifo), *nowhere], f"{fifo}: not a regular file"),
        (["deploy", "operator", "--app", "/dev/zero", *nowhere], "/dev/zero: not a regular"),
        (
            ["run", "-e", str(mine), "--output", str(tmp_path / "out"), *nowhere],
            f"{mine}: extensions[compare].evidence: must be an object",
        ),
    ]
    for args, expected in cases:
        done = _terminal(args, tmp_path)
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr + done.stdout
        (line,) = _lines(done.stderr)
        assert expected in line, line
    assert not (tmp_path / "out").exists()
