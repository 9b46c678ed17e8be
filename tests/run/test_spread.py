"""Spreading the trials that cannot share a cluster over sibling clusters (pure parts): how
many clusters by default, which trials may move, how many siblings a run makes, and which
trial starts where (compare.run.spread)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from compare import approaches as registry
from compare.approaches import builtin_target, load_target
from compare.paths import EXAMPLES_DIR, EXPERIMENTS_DIR
from compare.run.app import App
from compare.run.engine import RunRequest, admissible, plan_trials, schedule
from compare.run.experiments import load_experiments
from compare.run.spread import (
    MAIN,
    available_mib,
    default_clusters,
    may_move,
    next_start,
    siblings_wanted,
)
from compare.run.trial import TrialPlan
from tests.run.builders import WEBAPP

SHOP = App(load_target(EXAMPLES_DIR / "target-shop.yaml"))  # a helm chart and an operator


def _plans(app: App, approaches: Sequence[str], names: Sequence[str]) -> list[TrialPlan]:
    request = RunRequest(
        approaches=tuple(approaches),
        experiments=tuple(load_experiments(names)),
        app=app,
        output_dir=Path("out"),
        parallel=1,
        cannot_share=True,
    )
    return schedule(plan_trials(request))


def _movable(app: App) -> object:
    return lambda p: may_move(app, registry.get(p.approach), p)


@pytest.mark.parametrize(
    ("cores", "memory", "clusters"),
    [
        (2, 22000, 2),  # the 2-core machine: one sibling
        (1, 22000, 1),  # one core: none
        (4, 22000, 3),
        (8, 22000, 5),
        (64, 500000, 8),  # at most the cap
        (8, 3000, 1),  # memory for none beyond the reserve
        (8, 4100, 3),  # 2 GiB beyond the reserve: two siblings
        (2, 100, 1),
    ],
)
def test_the_default_follows_the_cores_and_the_memory(
    cores: int, memory: int, clusters: int
) -> None:
    assert default_clusters(cores, memory) == clusters


def test_the_available_memory_is_read_from_meminfo(tmp_path: Path) -> None:
    meminfo = tmp_path / "meminfo"
    meminfo.write_text("MemTotal: 24684000 kB\nMemAvailable:   4194304 kB\n")
    assert available_mib(meminfo) == 4096
    meminfo.write_text("MemTotal: 1 kB\n")
    assert available_mib(meminfo) is None
    assert available_mib(tmp_path / "absent") is None


def test_siblings_only_for_trials_they_can_get() -> None:
    assert siblings_wanted(2, movable=4, total=4) == 1
    assert siblings_wanted(8, movable=2, total=2) == 1  # the run's cluster takes one of them
    assert siblings_wanted(8, movable=2, total=5) == 2  # the run's cluster is busy with others
    assert siblings_wanted(8, movable=0, total=5) == 0
    assert siblings_wanted(1, movable=6, total=6) == 0  # --clusters 1: none
    assert siblings_wanted(3, movable=1, total=1) == 0


def test_chart_trials_move_and_exclusive_or_pinned_ones_stay() -> None:
    plans = _plans(SHOP, ("helm", "operator"), ("pod-delete-one", "operator-down-drift"))
    where = {(p.experiment.name, p.approach): may_move(SHOP, registry.get(p.approach), p)
             for p in plans}  # fmt: skip
    assert where == {
        ("pod-delete-one", "helm"): True,
        # The target's operator arm is checked (or installed) once, on the run's cluster.
        ("pod-delete-one", "operator"): False,
        # Exclusive: it stops the shared operator of the run's cluster.
        ("operator-down-drift", "operator"): False,
    }
    # The built-in app's arms are all readied per cluster: its operator trials may move.
    builtin = App(builtin_target(WEBAPP, Path("app.yaml")))
    (operator,) = _plans(builtin, ("operator",), ("pod-delete-one",))
    assert may_move(builtin, registry.get("operator"), operator)
    (wide,) = _plans(builtin, ("helm",), ("apiserver-restart-drift",))
    assert not may_move(builtin, registry.get("helm"), wide)


def test_a_trial_with_a_process_activity_stays(tmp_path: Path) -> None:
    # A process reads the environment (the run's cluster): its trial cannot be pointed.
    data = json.loads((EXPERIMENTS_DIR / "pod-delete-one.json").read_text())
    data["method"].insert(
        0, {"type": "action", "name": "note", "provider": {"type": "process", "path": "true"}}
    )
    path = tmp_path / "pod-delete-noted.json"
    path.write_text(json.dumps(data))
    (plan,) = _plans(SHOP, ("helm",), (str(path),))
    assert not may_move(SHOP, registry.get("helm"), plan)


def _start(
    queue: list[TrialPlan],
    main: list[TrialPlan],
    on: dict[str, list[TrialPlan]],
    ready: Sequence[str],
    movable: object,
) -> tuple[str, str] | None:
    found = next_start(
        queue,
        on,
        ready=ready,
        room=lambda p: not main and admissible(p, queue, main),
        movable=movable,  # type: ignore[arg-type]
    )
    return None if found is None else (found[0].slug, found[1])


def test_the_runs_cluster_first_then_an_idle_ready_sibling_one_trial_each() -> None:
    queue = _plans(SHOP, ("helm",), ("pod-delete-one", "image-change", "env-add"))
    first, second, third = queue
    movable = _movable(SHOP)
    # Nothing runs: the run's cluster, even with a sibling ready.
    assert _start(queue, [], {}, ["s2"], movable) == (first.slug, MAIN)
    # The run's cluster busy: the next one on the ready sibling.
    assert _start(queue[1:], [first], {}, ["s2"], movable) == (second.slug, "s2")
    # Both busy: it waits; a sibling not ready yet takes nothing.
    assert _start(queue[2:], [first], {"s2": [second]}, ["s2"], movable) is None
    assert _start(queue[1:], [first], {}, [], movable) is None
    # A second sibling ready: it takes the third.
    assert _start(queue[2:], [first], {"s2": [second]}, ["s2", "s3"], movable) == (
        third.slug,
        "s3",
    )


def test_a_trial_pinned_to_the_runs_cluster_waits_and_lets_movable_ones_pass() -> None:
    queue = _plans(SHOP, ("helm", "operator"), ("pod-delete-one",))
    helm = next(p for p in queue if p.approach == "helm")
    operator = next(p for p in queue if p.approach == "operator")
    busy = _plans(SHOP, ("helm",), ("image-change",))
    # The operator's trial comes first in the queue but stays for the run's cluster; the
    # helm trial behind it goes to the sibling.
    ordered = [operator, helm]
    assert _start(ordered, busy, {}, ["s2"], _movable(SHOP)) == (helm.slug, "s2")
    assert _start([operator], busy, {}, ["s2"], _movable(SHOP)) is None


def test_a_whole_run_spreads_over_two_clusters_one_trial_at_a_time_each() -> None:
    # Every trial takes one step; each step starts what can start, then all finish.
    queue = _plans(SHOP, ("helm",), ("pod-delete-one", "image-change", "env-add", "label-change"))
    movable = _movable(SHOP)
    placed: dict[str, str] = {}
    steps = 0
    while queue:
        main: list[TrialPlan] = []
        on: dict[str, list[TrialPlan]] = {}
        while (found := _start(queue, main, on, ["s2"], movable)) is not None:
            plan = next(p for p in queue if p.slug == found[0])
            queue.remove(plan)
            placed[plan.slug] = found[1]
            (main if found[1] == MAIN else on.setdefault(found[1], [])).append(plan)
        assert len(main) <= 1 and all(len(v) == 1 for v in on.values())
        steps += 1
    assert steps == 2  # four trials, two clusters
    assert sorted(placed.values()) == [MAIN, MAIN, "s2", "s2"]
