"""Faults judged by the shape of the chart's objects, end to end on the real cluster: on
tests/fixtures/charts/stateful-app (a StatefulSet behind a headless Service) a headless copy of
the Service would change nothing, so it is skipped with the reason, never "healed"; a rollout
restart of the StatefulSet (an allowed change) is `no-fault`, though each ordinal's pod is
missing for a moment while the rolling update makes it again."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results
from tests.target.test_stateful_target import _target

runner = CliRunner()


@pytest.mark.cluster
def test_a_headless_service_skips_the_headless_copy_and_a_statefulset_restart_is_no_fault(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    chosen = ("-e", "service-recreated-headless", "-e", "rollout-restart")
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(_target(tmp_path)), "-a", "helm", *chosen),
            *("--heal-window", "20", "--kubeconfig", str(cluster.kubeconfig)),
            *("--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    results = load_results(latest_run(out))
    assert {s.name: s.reason for s in results.skipped or []} == {
        "service-recreated-headless": (
            "changes nothing: service.spec.clusterIP is 'None' in the app's manifest already"
        )
    }
    [restart] = results.trials
    assert restart.experiment == "rollout-restart"
    assert restart.status == "no-fault", (restart.error, restart.evidence)
    assert restart.evidence.field is not None and restart.evidence.field.startswith(
        "statefulset.spec.template.metadata.annotations"
    )
