"""`compare run --target FILE -a operator` whose operator arm is the toolkit's own operator
(`install: {toolkit: true}`), on the real API server: the operator is the built-in app's -
shared, restarted after a fault that stops it, so the faults on its process apply - and the
desired state is the built-in chart's rendering of the target's WebApp; Events on the WebApp
time detection."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results

from .test_toolkit_target import _target

runner = CliRunner()


@pytest.mark.cluster
def test_a_toolkit_operator_target_runs_with_the_faults_on_its_process(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    target = _target(tmp_path, "toolkit-shop")
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(target), "-a", "operator"),
            *("-e", "deployment-delete", "-e", "operator-down-drift"),
            *("--heal-window", "10", "--output", str(out), "--kubeconfig", str(cluster.kubeconfig)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "preflight: the target's custom resources own Deployment shop and Service shop" in (
        result.output
    )
    # The summary names the app by its custom resource's kind.
    assert "WebApp shop; 1 trial per fault and approach;" in result.output
    results = load_results(latest_run(out))
    assert results.app.kind == "WebApp"
    # The faults on the toolkit's own operator process apply: nothing is skipped.
    assert results.complete and results.skipped == []
    cells = {t.experiment: t for t in results.trials}
    assert set(cells) == {"deployment-delete", "operator-down-drift"}
    deleted = cells["deployment-delete"]
    assert deleted.status == "healed", deleted.error
    assert deleted.evidence.uids_before is not None and deleted.evidence.uids_after is not None
    assert deleted.evidence.uids_before.deployment != deleted.evidence.uids_after.deployment
    # Detected by the toolkit operator's Event on the WebApp (a child recreated).
    assert deleted.evidence.detected_by is not None
    assert deleted.evidence.detected_by.startswith("Event Created")
    down = cells["operator-down-drift"]
    assert down.status == "healed", down.error
