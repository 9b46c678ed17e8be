"""`compare run --target FILE -a helm -a operator`: one app, deployed by its chart and by its
operator, under the same faults - on the real API server, reported and checked.

The app is the shop WebApp with a non-default spec (five replicas, several env vars,
requests and limits): charts/webapp with those values for Helm, a WebApp custom resource for
the operator (the toolkit's own local process, `alreadyInstalled`). Each operator trial
applies the custom resource in its namespace and holds the objects it owns to the baseline
taken once it is Available: the operator heals a deleted Deployment (a new UID) and a changed
image; with kube-controller-manager stopped, no approach brings deleted pods back; Helm heals
neither of the others. Before the cluster is touched: a flux arm and a missing operator key
are one line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.paths import EXAMPLES_DIR
from compare.results import latest_run, load_results

from .operator_targets import shop_target, webapp_operator

__all__ = ["webapp_operator"]  # the fixture, used by name below

runner = CliRunner()
NO_CLUSTER = ["--kubeconfig", "/nonexistent/kubeconfig"]


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return str(lines[0]).removeprefix("error: ")


def test_an_arm_the_target_lacks_is_one_line_before_the_cluster(tmp_path: Path) -> None:
    path = shop_target(tmp_path, helm=True)
    data = yaml.safe_load(path.read_text())
    # `-a flux` without a flux key; `-a operator` without an operator key.
    result = runner.invoke(app, ["run", "--target", str(path), "-a", "flux", *NO_CLUSTER])
    assert _one_error_line(result) == f"{path}: flux: not given (this target has no flux key)"
    del data["operator"]
    path.write_text(yaml.safe_dump(data))
    result = runner.invoke(app, ["run", "--target", str(path), "-a", "operator", *NO_CLUSTER])
    assert _one_error_line(result) == (
        f"{path}: operator: not given (this target has no operator key)"
    )


def test_deploy_timeout_is_for_every_run() -> None:
    # The built-in WebApp's trials deploy the way a target's do, within --deploy-timeout:
    # the option is taken, and the run goes on to the cluster.
    result = runner.invoke(app, ["run", "--deploy-timeout", "5", *NO_CLUSTER])
    assert _one_error_line(result) == "kubeconfig /nonexistent/kubeconfig: no such file"


POLICY = """\
version: 1
requireComplete: true
expectations:
  - approach: operator
    faults: [deployment-delete, image-change]
    expect: heals
    within: 9
    reason: the operator restores what its custom resource owns
  - approach: operator
    faults: [controller-manager-down]
    expect: does-not-heal
    reason: no ReplicaSet controller makes pods while it is stopped
  - approach: helm
    faults: all
    expect: does-not-heal
    reason: Helm applies its templates once
"""


@pytest.mark.cluster
def test_one_app_by_its_chart_and_by_its_operator_healed_and_not_reported_and_checked(
    cluster: ClusterTarget, tmp_path: Path, webapp_operator: None
) -> None:
    target = shop_target(tmp_path, helm=True)
    out = tmp_path / "reports"
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(target), "-a", "helm", "-a", "operator"),
            *("-e", "deployment-delete", "-e", "image-change", "-e", "controller-manager-down"),
            *("--heal-window", "8", "--output", str(out), *kubeconfig),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "preflight: the target's custom resources own Deployment shop and Service shop" in (
        result.output
    )
    run_dir = latest_run(out)
    results = load_results(run_dir)
    assert results.complete and results.skipped == []
    assert results.target is not None and results.target.name == "shop"
    cells = {(t.experiment, t.approach): t for t in results.trials}
    assert len(cells) == 6
    for name in ("deployment-delete", "image-change"):
        healed = cells[(name, "operator")]
        assert healed.status == "healed", (name, healed.error)
        assert healed.evidence.chaos_agrees is True
        assert cells[(name, "helm")].status == "not-healed", name
    # A new Deployment: the operator re-created it from the custom resource.
    deleted = cells[("deployment-delete", "operator")].evidence
    assert deleted.uids_before is not None and deleted.uids_after is not None
    assert deleted.uids_before.deployment != deleted.uids_after.deployment
    # The fault hit the operator's own container, and the operator took the image back.
    changed = cells[("image-change", "operator")].evidence
    assert changed.fault_seen is not None
    assert changed.field == "deployment.spec.template.spec.containers[webapp].image"
    assert changed.before == changed.after == "shop:v2" != changed.during
    for approach in ("helm", "operator"):
        down = cells[("controller-manager-down", approach)]
        assert down.status == "not-healed", (approach, down.error)
    # helm's changed image stays changed: its release's manifest is its desired state.
    assert any(
        "containers[webapp].image" in m
        for m in cells[("image-change", "helm")].evidence.mismatches_at_end
    )

    report = runner.invoke(app, ["report", str(run_dir), "--format", "md"])
    assert report.exit_code == 0, report.output
    row = next(line for line in report.stdout.splitlines() if "(`deployment-delete`)" in line)
    helm_cell, operator_cell = (cell.strip() for cell in row.strip("| ").split("|")[1:3])
    assert helm_cell.startswith("**NOT healed") and operator_cell.startswith("healed in"), row
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    checked = runner.invoke(app, ["check", str(run_dir), "--policy", str(policy)])
    assert checked.exit_code == 0, checked.output
    assert "policy holds" in checked.stdout
    # The example policy names no fault, only kinds: it holds on this run too.
    example = runner.invoke(
        app, ["check", str(run_dir), "--policy", str(EXAMPLES_DIR / "target-policy.yaml")]
    )
    assert example.exit_code == 0, example.output
    assert "policy holds" in example.stdout
