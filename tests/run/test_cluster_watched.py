"""The cluster itself is watched during a trial: a component down in the window - even in its
last seconds - makes the trial an error, never `not-healed`; a component the experiment stops
itself is its fault, not an outage."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from kubernetes import client
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.paths import EXPERIMENTS_DIR
from compare.results import latest_run, load_results
from compare.run.health import cluster_health, own_outages
from tests.run.experiment_files import TARGET, _action, _experiment


def test_the_components_an_experiment_stops_itself_are_exempt() -> None:
    down = json.loads((EXPERIMENTS_DIR / "controller-manager-down.json").read_text())
    assert own_outages(down) == ("kube-controller-manager",)
    restart = json.loads((EXPERIMENTS_DIR / "apiserver-restart-drift.json").read_text())
    assert set(own_outages(restart)) >= {"kube-apiserver", "kube-controller-manager"}
    plain = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    assert own_outages(plain) == ()


@pytest.mark.cluster
def test_a_component_down_late_in_the_window_makes_the_trial_an_error(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    assert cluster_health(cluster, api)() == []  # all up before
    doc = _experiment(
        "Scale, then the scheduler dies",
        _action("scale-then-crash", "tests.run.chaos_helpers", "scale_then_crash",
                component="kube-scheduler", after=3.0, **TARGET),
        {
            "name": "compare",
            "fault": "scaled, scheduler down late",
            "approaches": ["helm"],
            "evidence": {"target": "deployment", "field": "deployment.spec.replicas"},
            "exclusive": True,
            "scope": "cluster",
            "requires": ["embedded-cluster"],
        },
    )  # fmt: skip
    doc["rollbacks"] = [
        _action("start-control-plane", "compare.chaos.control_plane", "start_control_plane")
    ]
    path = tmp_path / "scale-then-crash.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            *("run", "--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
            *("-e", str(path), "--approach", "helm", "--heal-window", "4"),
        ],
    )
    try:
        (trial,) = load_results(latest_run(out)).trials
        # Helm would never heal a scale: without the check this was `not-healed`.
        assert trial.status == "error", (trial.status, result.output)
        assert trial.error is not None and "kube-scheduler is not running" in trial.error
    finally:
        assert cluster_health(cluster, api)() == []  # the rollback started it again
