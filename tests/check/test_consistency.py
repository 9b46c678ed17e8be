"""`compare check` refuses self-contradicting results and empty `except` rules as bad input
(exit 2), which stays distinct from a broken policy (exit 1); every recorded run passes."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from compare.check import load_policy
from compare.check.consistency import check_policy_names, check_results
from compare.cli import app
from compare.errors import CompareError
from compare.paths import REPO_ROOT
from compare.results import load_results
from compare.results.migrate import upgrade
from compare.results.store import parse_results
from tests.results.helpers import FIXTURES, fixture_json, write_run

RUNS = sorted(p.parent.name for p in FIXTURES.glob("*/results.json"))


@pytest.mark.parametrize("name", RUNS)
def test_every_recorded_run_is_consistent_with_the_default_policy(name: str) -> None:
    results = load_results(FIXTURES / name / "results.json")
    check_results(results, name)
    check_policy_names(load_policy(), results, "policy.yaml")


def test_the_sample_report_run_is_consistent() -> None:
    check_results(load_results(REPO_ROOT / "reports" / "sample" / "results.json"), "sample")


def test_a_heal_at_the_window_s_end_is_not_a_contradiction() -> None:
    data = fixture_json("single-trial")
    data["trials"][0]["timeToHealSeconds"] = 10.0
    check_results(parse_results(data), "run")
    data["trials"][0]["timeToHealSeconds"] = 10.01
    with pytest.raises(CompareError, match=r"run: trials\[0\]\.timeToHealSeconds: 10\.01 s"):
        check_results(parse_results(data), "run")


def test_a_contradiction_is_exit_2_and_a_violation_exit_1(tmp_path: Path) -> None:
    runner = CliRunner()
    policy = tmp_path / "policy.yaml"
    rule = {"approach": "helm", "faults": ["pod-delete-one"], "expect": "does-not-heal"}
    policy.write_text(yaml.safe_dump({"version": 1, "expectations": [rule]}))
    data = fixture_json("single-trial")
    run = write_run(tmp_path, data)
    broken = runner.invoke(app, ["check", str(run), "--policy", str(policy)])
    assert broken.exit_code == 1, broken.output
    assert "policy broken" in broken.stdout
    data["trials"][0]["timeToHealSeconds"] = 99.0
    run = write_run(tmp_path, data, name="contradicting")
    refused = runner.invoke(app, ["check", str(run), "--policy", str(policy)])
    assert refused.exit_code == 2, refused.output
    assert refused.stdout == "" and "timeToHealSeconds: 99 s is after" in refused.stderr


def test_an_arm_left_out_by_the_preflight_is_not_one_the_run_ran() -> None:
    data = upgrade(fixture_json("single-trial"))
    ran = data["settings"]["approaches"][0]
    data["preflightFindings"] = [{"approach": "argocd", "finding": "Argo CD rewrites x"}]
    check_results(parse_results(data), "run")
    data["preflightFindings"] = [{"approach": ran, "finding": "Argo CD rewrites x"}]
    with pytest.raises(CompareError, match=rf"run: preflightFindings\[0\]\.approach: '{ran}'"):
        check_results(parse_results(data), "run")
