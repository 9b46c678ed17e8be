"""The faults on a chart's ConfigMap and Secret run for the flux arm too, with a verdict (issue
39: they used to show `n/a` without a reason), on the real helm-controller.

The chart is tests/fixtures/charts/stateful-app (a StatefulSet, a mounted ConfigMap, a Secret).
Measured: helm-controller's drift correction puts a changed ConfigMap value back; a changed
Secret value it detects (`DriftDetected`) but cannot correct (its `DriftCorrectionFailed`
Event: "patch failure: illegal base64 data"), although the injection wrote valid base64: a
verdict of Flux's, not a toolkit error.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results

runner = CliRunner()
CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "stateful-app"


@pytest.mark.cluster
def test_flux_heals_a_changed_configmap_value_and_not_a_changed_secret_value(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    arm = {"chart": {"path": str(CHART)}, "release": "sapp", "values": {"replicas": 1}}
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump({**_HEAD, "flux": arm}))
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(path), "-a", "flux"),
            *("-e", "configmap-data-change", "-e", "secret-data-change"),
            *("--heal-window", "8", "--flux-interval", "2"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    results = load_results(latest_run(out))
    assert results.complete and results.skipped == []
    trials = {t.experiment: t for t in results.trials}
    assert set(trials) == {"configmap-data-change", "secret-data-change"}
    changed, secret = trials["configmap-data-change"], trials["secret-data-change"]
    assert changed.status == "healed", (changed.error, changed.evidence.mismatches_at_end)
    assert changed.evidence.healed_by == ["helm-controller"]
    # Seen, detected by helm-controller, never corrected: its patch of the Secret fails.
    assert secret.status == "not-healed", secret.error
    assert secret.evidence.fault_seen is not None
    assert secret.evidence.detected_by == "Event DriftDetected (seen at arrival)"
    assert any(m.startswith("secret.data.") for m in secret.evidence.mismatches_at_end)


_HEAD = {"apiVersion": "compare.example.com/v1alpha1", "kind": "Target", "name": "sapp"}
