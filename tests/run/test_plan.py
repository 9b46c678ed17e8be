"""Planning a run, naming namespaces, preparing an experiment for chaoslib (pure parts)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from compare.approaches import builtin_target
from compare.errors import CompareError
from compare.paths import EXPERIMENTS_DIR
from compare.run.app import App
from compare.run.engine import (
    Run,
    RunRequest,
    admissible,
    new_run_id,
    plan_trials,
    runnable,
    schedule,
)
from compare.run.experiments import load_experiments, load_spec
from compare.run.runner import epoch, inline_refs
from compare.run.trial import TrialPlan, namespace_for
from compare.webapp import WebApp, load_webapp
from tests.run.builders import WEBAPP


def _request(
    *names: str,
    approaches: tuple[str, ...] = ("helm", "operator"),
    trials: int = 1,
    webapp: WebApp = WEBAPP,
) -> RunRequest:
    return RunRequest(
        approaches=approaches,
        experiments=tuple(load_experiments(names)),
        app=App(builtin_target(webapp, Path("app.yaml"))),
        output_dir=Path("out"),
        trials=trials,
    )


@pytest.fixture
def approach_wide(tmp_path: Path) -> str:
    """An experiment exclusive among its approach's trials only (`scope: approach`): the
    built-in operator-down-drift without its `scope: cluster`."""
    data = json.loads((EXPERIMENTS_DIR / "operator-down-drift.json").read_text())
    del data["extensions"][0]["scope"]
    path = tmp_path / "stop-operator-drift.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_every_approach_an_experiment_applies_to_times_trials() -> None:
    plans = plan_trials(_request("image-change", "operator-down-drift", trials=2))
    assert [(p.experiment.name, p.approach, p.trial) for p in plans] == [
        ("image-change", "helm", 1),
        ("image-change", "helm", 2),
        ("image-change", "operator", 1),
        ("image-change", "operator", 2),
        ("operator-down-drift", "operator", 1),
        ("operator-down-drift", "operator", 2),
    ]


def test_nothing_to_run_is_a_usage_error() -> None:
    with pytest.raises(CompareError, match="nothing to run: operator-down-drift apply to none"):
        plan_trials(_request("operator-down-drift", approaches=("helm",)))


def test_the_default_run_has_70_trials() -> None:
    # 34 faults x 2 approaches + operator-down-drift and operator-kill-drift (the operator only);
    # the faults on parts the WebApp has not are left out of its run, each with the reason.
    kept, skipped = runnable(_request(webapp=load_webapp()), embedded=True)
    assert len(plan_trials(kept)) == 70
    assert skipped == {
        "statefulset-pod-delete": (
            "applies to a StatefulSet only (the app's is Deployment webapp-demo)"
        ),
        "configmap-data-change": "needs a ConfigMap (the app's manifest has none)",
        "configmap-delete": "needs a ConfigMap (the app's manifest has none)",
        "secret-data-change": "needs a Secret (the app's manifest has none)",
        "secret-delete": "needs a Secret (the app's manifest has none)",
        "rbac-binding-delete": (
            "needs a RoleBinding or ClusterRoleBinding (the app's manifest has none)"
        ),
    }
    # A WebApp without resources renders none: the fault sets a CPU request instead of
    # changing it (compare.chaos.choices), so the same faults run.
    kept, skipped = runnable(_request(), embedded=True)
    assert len(plan_trials(kept)) == 70
    assert "resources-change" not in skipped


def test_namespaces_are_valid_dns_labels(tmp_path: Path) -> None:
    long = tmp_path / ("A-very_long.Name-for-a-user-experiment-" * 3 + ".json")
    long.write_text((Path(__file__).parents[2] / "experiments/env-add.json").read_text())
    for spec in (load_spec("service-selector-change"), load_spec(str(long))):
        name = namespace_for("run", TrialPlan(spec, "operator", 12))
        assert len(name) <= 63
        assert re.fullmatch(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?", name), name
        assert name.startswith("cmp-op-") and "-12-" in name


def test_run_ids_start_with_the_utc_start() -> None:
    run_id = new_run_id(datetime(2026, 12, 2, 12, 0, 0, tzinfo=UTC))
    assert re.fullmatch(r"20261202T120000Z-[0-9a-f]{4}", run_id), run_id


def test_refs_are_inlined_before_running() -> None:
    probe = {"type": "probe", "name": "holds", "provider": {"type": "python"}}
    experiment: dict[str, Any] = {
        "steady-state-hypothesis": {"title": "t", "probes": [probe]},
        "method": [{"type": "action", "name": "x"}, {"ref": "holds"}],
        "rollbacks": [{"ref": "x"}],
    }
    inlined = inline_refs(experiment)
    assert inlined["method"][1] == probe and inlined["method"][1] is not probe
    assert inlined["rollbacks"][0] == {"type": "action", "name": "x"}


def test_journal_timestamps_become_epoch_seconds() -> None:
    assert epoch("2026-12-02T12:00:00.250000+00:00") == pytest.approx(1796212800.25)
    assert epoch("2026-12-02T12:00:00.250000") == pytest.approx(1796212800.25)  # naive = UTC


def test_the_exclusive_approach_goes_first_and_its_exclusive_trial_last_of_it(
    approach_wide: str,
) -> None:
    plans = schedule(plan_trials(_request("image-change", approach_wide, "env-add")))
    assert [(p.experiment.name, p.approach) for p in plans] == [
        ("image-change", "operator"),
        ("env-add", "operator"),
        ("stop-operator-drift", "operator"),
        ("image-change", "helm"),
        ("env-add", "helm"),
    ]


def test_an_exclusive_trial_waits_for_its_approach_but_not_for_the_others(
    approach_wide: str,
) -> None:
    plans = schedule(plan_trials(_request("image-change", approach_wide, trials=2)))
    op = [p for p in plans if p.approach == "operator" and not p.experiment.exclusive]
    alone = [p for p in plans if p.experiment.exclusive]
    helm = [p for p in plans if p.approach == "helm"]
    # Not while an operator trial runs or is still to run.
    assert not admissible(alone[0], [*alone, *helm], [op[0]])
    assert not admissible(alone[0], [op[1], *alone], [])
    # Beside Helm trials, yes; and a Helm trial may start beside it.
    assert admissible(alone[0], alone, helm[:1])
    assert admissible(helm[1], [helm[1]], [alone[0]])
    # Nothing of its own approach beside it, not even the second exclusive trial.
    assert not admissible(alone[1], [alone[1]], [alone[0]])
    assert not admissible(op[0], [op[0]], [alone[0]])


CLUSTER_WIDE = ("apiserver-restart-drift", "etcd-restart-drift", "controller-manager-down")


def test_cluster_wide_trials_go_first_one_by_one(approach_wide: str) -> None:
    plans = schedule(
        plan_trials(
            _request("image-change", approach_wide, "etcd-restart-drift", "operator-kill-drift")
        )
    )
    assert [(p.experiment.name, p.approach) for p in plans] == [
        ("etcd-restart-drift", "helm"),
        ("etcd-restart-drift", "operator"),
        ("operator-kill-drift", "operator"),
        ("image-change", "operator"),
        ("stop-operator-drift", "operator"),
        ("image-change", "helm"),
    ]


def test_the_approaches_of_a_shared_control_plane_fault_start_together() -> None:
    request = _request(
        "image-change",
        "etcd-restart-drift",
        approaches=("helm", "operator", "flux"),
        trials=2,
    )
    queue = schedule(plan_trials(request))
    first = queue[0]
    assert first.experiment.name == "etcd-restart-drift" and first.experiment.shares_fault
    group = Run._group(first, queue, width=12)
    # The same trial of each approach, injected once (compare.chaos.shared); trial 2 after.
    assert [(p.approach, p.trial) for p in group] == [("helm", 1), ("operator", 1), ("flux", 1)]
    # No wider than the run: with --parallel 2, two share it and the third runs later.
    assert len(Run._group(first, queue, width=2)) == 2
    assert [p.approach for p in Run._group(first, queue, width=1)] == ["helm"]
    # A fault that is not cluster-wide, or whose actions cannot be shared, starts alone.
    image = next(p for p in queue if p.experiment.name == "image-change")
    assert Run._group(image, queue, width=12) == [image]


def test_a_cluster_wide_experiment_with_an_action_of_yours_runs_its_trials_one_by_one(
    tmp_path: Path,
) -> None:
    data = json.loads((EXPERIMENTS_DIR / "etcd-restart-drift.json").read_text())
    data["method"].insert(
        0,
        {
            "type": "action",
            "name": "drain",
            "provider": {"type": "python", "module": "os", "func": "getcwd", "arguments": {}},
        },
    )
    path = tmp_path / "etcd-and-mine.json"
    path.write_text(json.dumps(data))
    queue = schedule(plan_trials(_request(str(path), approaches=("helm", "operator"))))
    assert queue[0].experiment.cluster_wide and not queue[0].experiment.shares_fault
    assert Run._group(queue[0], queue, width=12) == [queue[0]]


def test_the_experiments_that_stop_the_operator_run_alone_in_the_run() -> None:
    # Their time includes the operator's restart: measured alone, not under the run's load.
    for name in ("operator-down-drift", "operator-kill-drift"):
        (spec,) = load_experiments([name])
        assert spec.exclusive and spec.cluster_wide, name


def test_a_cluster_wide_trial_runs_alone_in_the_whole_run() -> None:
    plans = schedule(plan_trials(_request("image-change", "apiserver-restart-drift")))
    wide = [p for p in plans if p.experiment.cluster_wide]
    helm = next(p for p in plans if p.approach == "helm" and not p.experiment.cluster_wide)
    op = next(p for p in plans if p.approach == "operator" and not p.experiment.cluster_wide)
    assert [p.approach for p in wide] == ["helm", "operator"]
    # It starts only when nothing runs - not a trial of another approach either.
    assert admissible(wide[0], plans, [])
    assert not admissible(wide[1], plans[1:], [helm])
    assert not admissible(wide[1], plans[1:], [op])
    # Nothing starts beside it, whatever the approach, and not the other cluster-wide trial.
    for other in (helm, op, wide[1]):
        assert not admissible(other, [p for p in plans if p is not wide[0]], [wide[0]])
    # Nothing else starts while a cluster-wide trial is still to run (they go first) ...
    assert not admissible(helm, [wide[1], helm, op], [])
    # ... and once they are over, the rest runs side by side as before.
    assert admissible(helm, [helm, op], []) and admissible(op, [op], [helm])


def test_an_approach_wide_exclusive_trial_still_runs_beside_other_approaches(
    approach_wide: str,
) -> None:
    plans = schedule(plan_trials(_request("image-change", approach_wide)))
    kill = next(p for p in plans if p.experiment.exclusive)
    helm = next(p for p in plans if p.approach == "helm")
    assert not kill.experiment.cluster_wide
    assert admissible(kill, [kill, helm], []) and admissible(helm, [helm], [kill])


def test_a_cluster_without_what_an_experiment_needs_leaves_it_out_with_the_reason() -> None:
    request = _request("image-change", *CLUSTER_WIDE)
    kept, skipped = runnable(request, embedded=False)
    assert [s.name for s in kept.experiments] == ["image-change"]
    assert list(skipped) == list(CLUSTER_WIDE)
    assert all("needs the embedded cluster" in reason for reason in skipped.values())
    assert runnable(request, embedded=True) == (request, {})


def test_a_run_of_control_plane_faults_only_on_another_cluster_is_one_line() -> None:
    with pytest.raises(CompareError) as info:
        runnable(_request("etcd-restart-drift", "controller-manager-down"), embedded=False)
    text = info.value.message
    assert text.startswith("nothing to run on this cluster: etcd-restart-drift needs the embedded")
    assert "controller-manager-down needs the embedded cluster" in text and "\n" not in text
