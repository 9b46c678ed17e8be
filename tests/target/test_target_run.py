"""`compare run --target FILE -a helm`: your own chart under the faults, one release per trial.

Before the cluster is touched: an arm the target has no key for is one usage line (`-a flux`
runs a target's flux key: test_target_flux.py), and `--target` with `--app` is a usage error.
Against the real API server: the operator's own chart (charts/webapp-operator) is installed in
each trial's namespace; deleting one pod of its first Deployment heals (the ReplicaSet
controller makes pods with new uids), changing that Deployment's image does not (Helm does not
reconcile), and results.json names the target."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import is_target_file
from compare.paths import CHARTS_DIR, EXAMPLES_DIR
from compare.results import latest_run, load_results

runner = CliRunner()
NO_CLUSTER = ["--kubeconfig", "/nonexistent/kubeconfig"]
EXAMPLE = EXAMPLES_DIR / "target-operator-chart.yaml"


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return str(lines[0]).removeprefix("error: ")


@pytest.mark.parametrize(
    ("approaches", "message"),
    [
        (["-a", "operator"], f"{EXAMPLE}: operator: not given (this target has no operator key)"),
        (
            ["-a", "helm", "-a", "operator"],
            f"{EXAMPLE}: operator: not given (this target has no operator key)",
        ),
    ],
    ids=["operator-without-its-key", "helm-and-operator"],
)
def test_a_target_runs_the_arms_it_has(approaches: list[str], message: str) -> None:
    args = ["run", "--target", str(EXAMPLE), *approaches, "-e", "pod-delete-one", *NO_CLUSTER]
    result = runner.invoke(app, args)
    assert _one_error_line(result) == message


def test_target_and_app_are_mutually_exclusive() -> None:
    args = ["run", "--target", str(EXAMPLE), "--app", "x.yaml", "-a", "helm", *NO_CLUSTER]
    assert _one_error_line(runner.invoke(app, args)).startswith(
        "--target and --app are mutually exclusive"
    )


def test_the_probes_tell_a_target_file_from_a_webapp_manifest(tmp_path: Path) -> None:
    # `webapp_app_file` names either; a target's desired state is its release's manifest.
    assert is_target_file(EXAMPLE)
    assert not is_target_file(EXAMPLES_DIR / "webapp.yaml")
    other = tmp_path / "other.yaml"
    other.write_text("kind: Target\napiVersion: example.com/v1\n")
    assert not is_target_file(other)
    assert not is_target_file(tmp_path / "missing.yaml")


def _operator_chart_target(folder: Path) -> Path:
    """charts/webapp-operator as the app: watching every namespace (each trial has its own),
    one pod each, a webhook that never blocks anything else on the cluster."""
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "webapp-operator",
        # Named: the manager (the chart's main Service routes to its webhook's pods).
        "parts": {"workload": "Deployment/wop-webapp-operator"},
        "helm": {
            "chart": {"path": str(CHARTS_DIR / "webapp-operator")},
            "release": "wop",
            "values": {
                "manager": {"replicas": 1},
                "webhook": {"replicas": 1, "failurePolicy": "Ignore"},
            },
        },
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.cluster
def test_a_target_chart_heals_a_deleted_pod_and_keeps_a_changed_image(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    target = _operator_chart_target(tmp_path)
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(target), "-a", "helm"),
            *("-e", "pod-delete-one", "-e", "image-change", "--heal-window", "10"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    results = load_results(latest_run(out))
    assert results.complete
    assert results.target is not None
    assert results.target.name == "webapp-operator"
    assert os.path.samefile(results.target.file, target)
    assert results.app.name == "webapp-operator" and results.skipped == []
    trials = {t.experiment: t for t in results.trials}
    assert set(trials) == {"pod-delete-one", "image-change"}
    deleted, changed = trials["pod-delete-one"], trials["image-change"]
    assert deleted.status == "healed", deleted.error
    # Healed by new pods: the uids after are not the uids before.
    before, after = deleted.evidence.uids_before, deleted.evidence.uids_after
    assert before is not None and after is not None
    assert before.pods and after.pods and not set(before.pods) & set(after.pods)
    assert changed.status == "not-healed", changed.error
    # The fault changed the chart's own container (`manager`), and it stayed changed.
    assert changed.evidence.fault_seen is not None
    assert any(
        "containers[manager].image" in m and "myapp:chaos" in m
        for m in changed.evidence.mismatches_at_end
    ), changed.evidence.mismatches_at_end
    # Each trial removed its release: no ClusterRole of a trial release is left behind.
    roles = client.RbacAuthorizationV1Api(api).list_cluster_role().items
    assert not [r.metadata.name for r in roles if r.metadata.name.startswith("wop-")]
