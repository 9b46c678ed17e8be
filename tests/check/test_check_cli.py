"""`compare check`: exit 0 when the policy holds, 1 when broken, 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from tests.results.helpers import fixture, fixture_json, write_run

runner = CliRunner()


def _check(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["check", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_holds_exits_0() -> None:
    code, out, _ = _check(str(fixture("full-run").parent))
    assert code == 0, out
    assert out.splitlines()[-1] == "policy holds: 25 checks passed"
    assert "FAIL" not in out


def test_verbose_lists_what_holds() -> None:
    code, out, _ = _check(str(fixture("full-run")), "-v")
    assert code == 0
    assert "ok   operator/image-change: expected to heal within 5 s (max): holds" in out


def test_broken_exits_1_with_one_line_per_violation() -> None:
    code, out, _ = _check(str(fixture("with-errors")))
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert len(fails) == 13
    assert out.splitlines()[-1] == "policy broken: 13 of 19 checks failed"
    assert any("trials ended in error (an error counts as not healed" in f for f in fails)


def test_custom_policy_that_holds_on_a_broken_run(tmp_path: Path) -> None:
    policy = tmp_path / "p.yaml"
    policy.write_text(
        "version: 1\n"
        "expectations:\n"
        "  - approach: operator\n"
        "    faults: [deployment-scale-zero, deployment-delete]\n"
        "    expect: heals\n"
        "    within: 2\n"
    )
    code, out, _ = _check(str(fixture("with-errors")), "--policy", str(policy))
    assert code == 0, out
    assert "note 10 cells not covered by the policy" in out


def test_interrupted_run_exits_1() -> None:
    code, out, _ = _check(str(fixture("interrupted")))
    assert code == 1
    assert "FAIL run 20261204T093000Z-e5f6 is incomplete" in out


def test_latest_run_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("compare.cli.check_cmd.REPORTS_DIR", tmp_path)
    code, _, err = _check()
    assert code == 2
    assert "no run with a results.json under" in err
    write_run(tmp_path, fixture_json("full-run"), "20261202T120000Z-ab12")
    code, out, _ = _check()
    assert code == 0
    assert str(tmp_path / "20261202T120000Z-ab12" / "results.json") in out


def _one_line_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def test_malformed_policy_exits_2(tmp_path: Path) -> None:
    policy = tmp_path / "bad.yaml"
    policy.write_text("version: 1\nexpectations:\n  - approach: helm\n    expect: heals\n")
    code, out, err = _check(str(fixture("full-run")), "--policy", str(policy))
    assert code == 2
    assert out == ""
    line = _one_line_error(err)
    assert f"{policy}: expectations[0].faults: required field is missing" in line


def test_missing_policy_exits_2(tmp_path: Path) -> None:
    code, _, err = _check(str(fixture("full-run")), "--policy", str(tmp_path / "none.yaml"))
    assert code == 2
    assert "none.yaml: not found" in _one_line_error(err)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json at all", "results.json: not valid JSON (line 1, column 1"),
        (json.dumps({"schemaVersion": 9}), "results.json: schemaVersion 9 is not supported"),
        ("MISSING_FIELD", "results.json: runId: required field is missing"),
    ],
)
def test_malformed_results_exit_2(tmp_path: Path, content: str, message: str) -> None:
    if content == "MISSING_FIELD":
        data = fixture_json("full-run")
        del data["runId"]
        content = json.dumps(data)
    run = write_run(tmp_path, content)
    code, out, err = _check(str(run))
    assert code == 2
    assert out == ""
    assert message in _one_line_error(err)


def test_missing_run_and_wrong_flag_exit_2(tmp_path: Path) -> None:
    code, _, err = _check(str(tmp_path / "nope"))
    assert code == 2
    assert "no such run directory or results file" in _one_line_error(err)
    code, _, err = _check(str(fixture("full-run")), "--polcy", "x")
    assert code == 2
    assert "No such option" in err
