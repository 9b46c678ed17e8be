"""`compare report`: run selection, output files, formats and one-line errors (exit 2)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from tests.results.helpers import POLICY, fixture, fixture_json, write_run

runner = CliRunner()


def _report(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["report", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_latest_run_table_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("compare.cli.report_cmd.REPORTS_DIR", tmp_path)
    code, _, err = _report()
    assert code == 2
    assert "no run with a results.json under" in _one_line_error(err)
    write_run(tmp_path, fixture_json("single-trial"), "20261205T140000Z-0a1b")
    code, out, _ = _report()
    assert code == 0
    assert out.startswith("run 20261205T140000Z-0a1b")
    assert "operator healed 4/4 faults" in out


@pytest.mark.parametrize(
    ("fmt", "start"),
    [
        ("table", "run 2026"),
        ("md", "# Helm vs operator"),
        ("json", "{"),
        ("junit", '<?xml version="1.0"'),
    ],
)
def test_formats_to_stdout(fmt: str, start: str) -> None:
    code, out, _ = _report(str(fixture("full-run")), "--format", fmt)
    assert code == 0
    assert out.startswith(start)


def test_output_file_is_written_whole(tmp_path: Path) -> None:
    target = tmp_path / "out" / "summary.json"
    code, out, err = _report(str(fixture("with-errors")), "-f", "json", "-o", str(target))
    assert code == 0
    assert out == ""
    assert f"json report written to {target}" in err
    assert json.loads(target.read_text())["runId"] == "20261203T081500Z-c3d4"
    assert sorted(p.name for p in target.parent.iterdir()) == ["summary.json"]


def test_html_defaults_to_the_run_dir(tmp_path: Path) -> None:
    run = tmp_path / "20261203T081500Z-c3d4"
    shutil.copytree(fixture("with-errors").parent, run)
    code, _, err = _report(str(run), "--format", "html")
    assert code == 0
    page = run / "report.html"
    assert f"html report written to {page}" in err
    text = page.read_text()
    # Journals are linked relative to the run dir, where the page is.
    assert 'href="journals/image-change-operator-2.json"' in text
    code, out, _ = _report(str(run), "--format", "html", "-o", "-")
    assert code == 0
    assert out.startswith("<!DOCTYPE html>")


def test_policy_is_applied_when_given(tmp_path: Path) -> None:
    code, out, _ = _report(str(fixture("with-errors")), "--policy", str(POLICY))
    assert code == 0  # reporting is not gating; `compare check` is
    assert "BROKEN (13 of 19 checks)" in out


def test_malformed_results_write_nothing(tmp_path: Path) -> None:
    data = fixture_json("full-run")
    data["trials"][4]["status"] = "healed-ish"
    run = write_run(tmp_path, data)
    target = tmp_path / "report.html"
    code, out, err = _report(str(run), "-f", "html", "-o", str(target))
    assert code == 2
    assert out == ""
    line = _one_line_error(err)
    assert f"{run / 'results.json'}: trials[4].status: Input should be" in line
    assert not target.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]


def test_junit_with_malformed_policy_exits_2(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text("version: 1\nexpectations: nope\n")
    code, _, err = _report(str(fixture("full-run")), "-f", "junit", "--policy", str(policy))
    assert code == 2
    assert f"{policy}: expectations: Input should be a valid list" in _one_line_error(err)


def test_bad_format_and_missing_run_exit_2(tmp_path: Path) -> None:
    code, _, err = _report(str(fixture("full-run")), "--format", "pdf")
    assert code == 2
    assert "pdf" in err
    code, _, err = _report(str(tmp_path / "missing"))
    assert code == 2
    assert "no such run directory or results file" in _one_line_error(err)
    code, _, err = _report(str(tmp_path))
    assert code == 2
    assert f"no results.json in {tmp_path}" in _one_line_error(err)
