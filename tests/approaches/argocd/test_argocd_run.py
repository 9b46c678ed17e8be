"""`compare run -a argocd`: the approach through the registry, end to end on the real Argo CD
controllers - a changed image healed by Argo CD's self-heal (its `OperationStarted` Event on
the Application, watched during the trial, times detection by its arrival), a deleted
Deployment healed only by a new object (new uid), and drift Argo CD's default three-way diff
does not see (an added env var, a foreign label) left as it is. The run records the diff
strategy; a run without `--approach` has no argocd trials."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.approaches import default_names, names
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("argocd_cleanup")]
runner = CliRunner()
HEALED = ("image-change", "deployment-delete")
LEFT = ("env-add", "deployment-label-add")
# The field manager Argo CD's application controller writes a sync under.
ARGOCD_MANAGER = "argocd-controller"


def test_a_run_of_the_argocd_approach_heals_and_leaves_what_argocd_does(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    chosen = [arg for name in (*HEALED, *LEFT) for arg in ("-e", name)]
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            # Its heals take 2-4 s; the faults it leaves wait out the whole window.
            *("run", "-a", "argocd", *chosen, "--heal-window", "10"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    results = load_results(latest_run(out))
    assert results.complete and results.settings.approaches == ["argocd"]
    assert results.settings.approach_settings["argocd"] == {"diff": "three-way"}
    trials = {t.experiment: t for t in results.trials}
    assert set(trials) == {*HEALED, *LEFT}
    for name in HEALED:
        trial = trials[name]
        assert trial.status == "healed", (name, trial.error, trial.evidence.mismatches_at_end)
        assert trial.evidence.fault_seen is not None
    # Argo CD's Events have whole seconds only: the watch during the trial times the detection
    # by the Event's arrival, after the injection and no later than the heal it announced.
    healed = trials["image-change"]
    assert healed.evidence.detected_by == "Event OperationStarted (seen at arrival)"
    assert healed.time_to_detect_seconds is not None and healed.time_to_heal_seconds is not None
    # 0 when the Event arrived before the injecting call returned (the controller was quicker).
    assert 0 <= healed.time_to_detect_seconds <= healed.time_to_heal_seconds
    assert "deployment" in trials["deployment-delete"].evidence.recreated
    # Argo CD's application controller wrote those heals, not Kubernetes.
    for name in ("image-change", "deployment-delete"):
        assert trials[name].evidence.healed_by == [ARGOCD_MANAGER], trials[name].evidence
    for name in LEFT:
        trial = trials[name]
        assert trial.status == "not-healed", (name, trial.error)
        assert trial.evidence.mismatches_at_end, name
    assert "argocd diff three-way" in result.output


def test_argocd_is_registered_but_not_part_of_a_default_run() -> None:
    assert "argocd" in names() and "argocd" not in default_names()
    assert default_names() == ("helm", "operator", "flux")


def test_a_bad_diff_strategy_is_one_line_before_the_cluster_is_touched() -> None:
    result = runner.invoke(app, ["run", "-a", "argocd", "--argocd-diff", "two-way"])
    assert result.exit_code == 2
    assert "--argocd-diff 'two-way': must be one of three-way, server-side" in result.output
