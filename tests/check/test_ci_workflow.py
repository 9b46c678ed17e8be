"""The CI recipe (.github/workflows/chaos.yml) stays valid and its commands match the CLI."""

from __future__ import annotations

import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from compare.cli import app
from compare.paths import REPO_ROOT
from tests.results.helpers import fixture

WORKFLOW = REPO_ROOT / ".github" / "workflows" / "chaos.yml"


def _steps() -> list[dict[str, Any]]:
    data = yaml.safe_load(WORKFLOW.read_text())
    # YAML 1.1 reads the `on:` key as True; GitHub reads it as "on".
    assert set(data.get(True) or data.get("on")) >= {"pull_request", "push"}
    steps: list[dict[str, Any]] = data["jobs"]["chaos"]["steps"]
    return steps


def _commands(name: str) -> list[list[str]]:
    """Every `.venv/bin/compare <name> ...` line of the workflow, split like a shell would."""
    found = []
    for step in _steps():
        for line in str(step.get("run", "")).replace("\n\n", "\n").split("\n"):
            words = shlex.split(line.split(">>")[0]) if "compare" in line else []
            if words[:2] == [".venv/bin/compare", name]:
                found.append(words[2:])
    return found


def test_workflow_has_the_chaos_steps() -> None:
    steps = _steps()
    uses = [str(s.get("uses", "")).split("@")[0] for s in steps]
    assert "helm/kind-action" in uses
    assert "actions/upload-artifact" in uses
    assert "mikepenz/action-junit-report" in uses
    run = " ".join(str(s.get("run", "")) for s in steps)
    assert "compare run" in run and "--kubeconfig" in run and "--context" in run
    # The gate runs last and without `if:`, so a broken policy fails the job.
    assert "compare check" in str(steps[-1].get("run")) and "if" not in steps[-1]


def test_workflow_report_and_check_commands_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reports = tmp_path / "reports"
    shutil.copytree(fixture("full-run").parent, reports / "20261202T120000Z-ab12")
    monkeypatch.setattr("compare.cli.report_cmd.REPORTS_DIR", reports)
    monkeypatch.setattr("compare.cli.check_cmd.REPORTS_DIR", reports)
    monkeypatch.chdir(REPO_ROOT)
    runner = CliRunner()
    report_lines = _commands("report")
    assert len(report_lines) == 4
    for args in report_lines:
        # Outputs go to the temporary reports dir instead of the repository's.
        args = [str(tmp_path / a) if a.startswith("reports/") else a for a in args]
        result = runner.invoke(app, ["report", *args])
        assert result.exit_code == 0, (args, result.output)
    assert (reports / "junit.xml").is_file()
    assert (reports / "report.html").is_file()
    (check,) = _commands("check")
    result = runner.invoke(app, ["check", *check])
    # The command line is valid (exit 2 would be a usage error); whether the policy holds depends
    # on the recorded run: this one predates faults the current policy names.
    assert result.exit_code in (0, 1), result.output
    assert result.output.startswith("policy experiments/policy.yaml on "), result.output
