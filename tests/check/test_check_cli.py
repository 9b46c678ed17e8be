"""`compare check`: exit 0 when the policy holds, 1 when broken, 2 on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.check import DEFAULT_POLICY
from compare.cli import app
from tests.results.helpers import POLICY, fixture, fixture_json, write_run

runner = CliRunner()


def _check(*args: str) -> tuple[int, str, str]:
    result = runner.invoke(app, ["check", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def _check_fixture_policy(*args: str) -> tuple[int, str, str]:
    """`compare check` with the policy the fixture runs were recorded for."""
    result = runner.invoke(app, ["check", *args, "--policy", str(POLICY)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout, result.stderr


def test_holds_exits_0() -> None:
    code, out, _ = _check_fixture_policy(str(fixture("full-run").parent))
    assert code == 0, out
    assert out.splitlines()[-1] == "policy holds: 25 checks passed"
    assert "FAIL" not in out


def test_verbose_lists_what_holds() -> None:
    code, out, _ = _check_fixture_policy(str(fixture("full-run")), "-v")
    assert code == 0
    assert "ok   operator/image-change: expected to heal within 5 s (max): holds" in out


def test_broken_exits_1_with_one_line_per_violation() -> None:
    code, out, _ = _check_fixture_policy(str(fixture("with-errors")))
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
    code, out, _ = _check_fixture_policy(str(fixture("interrupted")))
    assert code == 1
    assert "FAIL run 20261204T093000Z-e5f6 is incomplete" in out


def test_latest_run_by_default(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("compare.cli.check_cmd.REPORTS_DIR", tmp_path)
    code, _, err = _check()
    assert code == 2
    assert "no run with a results.json under" in err
    write_run(tmp_path, fixture_json("full-run"), "20261202T120000Z-ab12")
    code, out, _ = _check_fixture_policy()
    assert code == 0
    assert str(tmp_path / "20261202T120000Z-ab12" / "results.json") in out
    # Without --policy: experiments/policy.yaml (it names faults this old run lacks: exit 1).
    code, out, _ = _check()
    assert code in (0, 1)
    assert out.startswith(f"policy {DEFAULT_POLICY} on {tmp_path}")


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


def _policy_file(tmp_path: Path, text: str) -> str:
    policy = tmp_path / "p.yaml"
    policy.write_text(text)
    return str(policy)


def test_expect_no_fault_holds_exits_0(tmp_path: Path) -> None:
    policy = _policy_file(
        tmp_path,
        "version: 1\n"
        "expectations:\n"
        "  - approach: operator\n"
        "    faults: [annotation-add]\n"
        "    expect: no-fault\n"
        "    reason: the judge allows annotations nobody owns\n"
        "  - approach: helm\n"
        "    faults: [annotation-add]\n"
        "    expect: no-fault\n",
    )
    code, out, _ = _check(str(fixture("no-fault-and-flaps")), "--policy", policy, "-v")
    assert code == 0, out
    assert (
        "ok   operator/annotation-add: expected no fault (the injection changes nothing the"
        " judge checks): holds"
    ) in out
    assert out.splitlines()[-1] == "policy holds: 2 checks passed"


def test_no_fault_trial_under_does_not_heal_exits_1(tmp_path: Path) -> None:
    policy = _policy_file(
        tmp_path,
        "version: 1\n"
        "expectations:\n"
        "  - approach: helm\n"
        "    faults: [env-add, image-change]\n"
        "    expect: does-not-heal\n",
    )
    code, out, _ = _check(str(fixture("no-fault-and-flaps")), "--policy", policy)
    assert code == 1
    fails = [line for line in out.splitlines() if line.startswith("FAIL ")]
    assert fails == [
        "FAIL helm/env-add: expected not to heal: env-add/helm trial 2: the injection changed"
        " nothing (no-fault), so the fault was not exercised"
    ]
    assert out.splitlines()[-1] == "policy broken: 1 of 2 checks failed"


def test_v1_run_is_checked_after_upgrade(tmp_path: Path) -> None:
    policy = _policy_file(
        tmp_path,
        "version: 1\n"
        "expectations:\n"
        "  - approach: helm\n"
        "    faults: [pod-delete-one, pod-delete-all, replicaset-delete]\n"
        "    expect: heals\n"
        "    within: 5\n",
    )
    code, out, _ = _check(str(fixture("recorded-helm")), "--policy", policy)
    assert code == 0, out
    assert out.splitlines()[-1] == "policy holds: 3 checks passed"


def test_v1_file_with_a_no_fault_status_exits_2(tmp_path: Path) -> None:
    data = fixture_json("single-trial")
    data["trials"][0].update(status="no-fault", timeToHealSeconds=None)
    run = write_run(tmp_path, data)
    code, out, err = _check(str(run), "--policy", str(POLICY))
    assert code == 2
    assert out == ""
    assert "trials[0].status: 'no-fault' is not a schemaVersion 1 status" in _one_line_error(err)


def test_unknown_expect_value_exits_2(tmp_path: Path) -> None:
    policy = _policy_file(
        tmp_path,
        "version: 1\nexpectations:\n  - {approach: helm, faults: all, expect: nofault}\n",
    )
    code, _, err = _check(str(fixture("full-run")), "--policy", policy)
    assert code == 2
    assert (
        "expectations[0].expect: Input should be 'heals', 'does-not-heal' or 'no-fault'"
        in _one_line_error(err)
    )
