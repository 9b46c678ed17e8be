"""Faults act on what the app has: a Deployment with no CPU request, no probes and no
`app.kubernetes.io/component` label (tests/fixtures/operators/cache/plain.yaml: the
plain-app chart for Helm; for the operator arm a Cache the fixture operator runs as a
Deployment, a local process, `alreadyInstalled`).

The faults that change such a field set or add it instead (`compare.chaos.choices`): each is
drift against the closed-world desired state, left as it is by Helm and put back by the
operator (its PUT of the whole desired object drops the added field). `probe-remove` has
nothing to remove and is skipped with the reason. Counted over the whole catalogue, the
operator arm runs at least 80 % of the faults that act on a Deployment.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.approaches import load_target
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results
from compare.run.app import App
from compare.run.engine import RunRequest
from compare.run.experiments import load_experiments
from compare.run.launch import prepared
from compare.run.workload import accepted

from .cache_target import OPERATOR_DIR, cache_operator

__all__ = ["cache_operator"]  # the fixture, used by name below

runner = CliRunner()
TARGET = OPERATOR_DIR / "plain.yaml"
# Formerly skipped on such a Deployment ("has none to change"): now each sets or adds it.
ADDED = {
    "resources-change": ("resources.requests.cpu", "250m"),
    "probe-change": ("readinessProbe.periodSeconds", 30),
    "label-change": ("labels[app.kubernetes.io/component]", "chaos"),
}
CONTAINERS = {"helm": "app", "operator": "cache"}
SHARE = 0.8


@pytest.mark.cluster
def test_absent_fields_are_added_and_judged_as_drift(
    cluster: ClusterTarget, tmp_path: Path, cache_operator: Path
) -> None:
    out = tmp_path / "reports"
    chosen = [arg for name in (*ADDED, "probe-remove") for arg in ("-e", name)]
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(TARGET), "-a", "helm", "-a", "operator", *chosen),
            *("--heal-window", "8", "--kubeconfig", str(cluster.kubeconfig)),
            *("--output", str(out)),
        ],
    )
    log = cache_operator.read_text(errors="replace")[-3000:]
    assert result.exit_code == 0, (result.output, log)
    results = load_results(latest_run(out))
    assert results.complete
    # Nothing to remove: skipped with each arm's reason (its own container), not an error.
    assert {s.name: s.reason for s in results.skipped or []} == {
        "probe-remove": "helm: needs deployment.spec.template.spec.containers[app].livenessProbe"
        " (the app's manifest has none to change); operator: needs"
        " deployment.spec.template.spec.containers[cache].livenessProbe"
        " (the operator's baseline of owned objects has none to change)"
    }
    trials = {(t.experiment, t.approach): t for t in results.trials}
    assert set(trials) == {(name, a) for name in ADDED for a in CONTAINERS}
    for (name, approach), trial in trials.items():
        evidence = trial.evidence
        where, value = ADDED[name]
        container = f"containers[{CONTAINERS[approach]}]"
        prefix = "deployment.spec.template.metadata" if "labels" in where else (
            f"deployment.spec.template.spec.{container}"
        )  # fmt: skip
        assert evidence.field == f"{prefix}.{where}", (name, approach)
        # Absent before, added by the fault: drift the judge saw.
        assert evidence.before is None and evidence.during == value, (name, approach)
        assert evidence.fault_seen is not None, (name, approach, trial.error)
        if approach == "helm":
            # Helm applies once: the added field stays.
            assert trial.status == "not-healed", (name, trial.error)
            assert evidence.after == value
        else:
            # The operator writes its whole desired object: the added field is gone again.
            assert trial.status == "healed", (name, trial.error, evidence.mismatches_at_end, log)
            assert evidence.after is None


PROCESS_ONLY = (
    "acts on an operator process the toolkit runs (its own, or a target's install.process),"
    " not an operator it does not run"
)


@pytest.mark.cluster
def test_the_operator_arm_runs_most_deployment_faults_of_the_catalogue(
    cluster: ClusterTarget, tmp_path: Path, cache_operator: Path
) -> None:
    # Which faults act on a Deployment: the catalogue's own `kinds` (never a list kept here).
    catalogue = load_experiments(())
    on_deployment = [
        s.name for s in catalogue if "workload" in s.needs and "Deployment" in accepted(
            "workload", s.kinds
        )
    ]  # fmt: skip
    assert len(on_deployment) >= 20
    request = RunRequest(
        approaches=("operator",),
        experiments=tuple(catalogue),
        app=App(load_target(TARGET)),
        output_dir=tmp_path,
    )
    # The run's own preflight (the Cache deployed once, its owned objects read) and its own
    # decision of what applies; nothing is executed.
    with prepared(
        cluster,
        request,
        say=lambda _: None,
        doing=lambda _: contextlib.nullcontext(),
        warn=lambda _: None,
    ) as ready:
        skipped = dict(ready.run.skipped)
    assert ready.run.request.app.operator_workload is not None
    assert ready.run.request.app.operator_workload.kind == "Deployment"
    runs = [name for name in on_deployment if name not in skipped]
    assert len(runs) >= SHARE * len(on_deployment), {n: skipped[n] for n in on_deployment}
    # What is left out acts on nothing this app has: a probe to remove, an operator process
    # the toolkit runs (this target's operator runs already: `alreadyInstalled`).
    assert {n: skipped[n] for n in on_deployment if n in skipped} == {
        "probe-remove": "needs deployment.spec.template.spec.containers[cache].livenessProbe"
        " (the operator's baseline of owned objects has none to change)",
        "operator-down-drift": PROCESS_ONLY,
        "operator-kill-drift": PROCESS_ONLY,
    }
