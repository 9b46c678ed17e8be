"""Trials that cannot share a cluster, spread over sibling clusters.

An app whose trials cannot run side by side on one cluster (`compare.run.sharing`: an object
with a fixed cluster-wide name, a host port) runs one trial at a time per cluster. On the
embedded cluster a run makes up to `clusters - 1` siblings of its cluster for them
(`compare.run.sibling.SiblingCluster`, the fault cluster's mechanism: made beside the run,
owned by its process, deleted after it) and starts each trial on whichever cluster is free:
the run's own first, else a sibling that is ready and idle (`next_start`). Every trial is
still one namespace and one install; a sibling gets the shared parts of the approaches whose
trials may go there (`App.prepare`: Flux's, Argo CD's controllers, started per cluster).

A trial goes to a sibling only when nothing ties it to the run's cluster (`may_move`): not an
exclusive or cluster-wide experiment (they act on the run's cluster's shared parts or control
plane, and are recovered there), every activity a Python call (pointed at the sibling through
its secrets, `compare.run.sibling.point`), an arm that `prepare` alone readies
(`App.per_cluster_arm`).

How many clusters by default (`default_clusters`): the run's and one sibling per two cores,
no more siblings than GiB of available memory beyond a reserve (a sibling's control plane with
Flux's and Argo CD's controllers takes 0.7 to 1 GiB), at most DEFAULT_CAP in all; a 2-core
machine gets one sibling, a 1-core machine none.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from compare.approaches import Approach
from compare.run.app import App
from compare.run.sibling import SiblingCluster, pointable
from compare.run.trial import TrialPlan

# `--clusters` accepts 1 to this.
MAX_CLUSTERS = 16
# The default never makes more than this many clusters (the run's and its siblings).
DEFAULT_CAP = 8
# Memory kept for the run's cluster, the run and the rest of the machine, then per sibling.
MEMORY_RESERVE_MIB = 2048
SIBLING_MIB = 1024
# The run's own cluster, in `next_start`'s answers and its `running` map.
MAIN = ""


def available_mib(meminfo: Path = Path("/proc/meminfo")) -> int | None:
    """The memory the kernel says is available (MemAvailable), in MiB; None when unknown."""
    try:
        for line in meminfo.read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cpus() -> int:
    """The cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def default_clusters(cores: int | None = None, memory_mib: int | None = None) -> int:
    """How many clusters a run spreads unshareable trials over by default (see the module's
    docstring): from the cores and the available memory (this machine's when not given)."""
    cores = cpus() if cores is None else cores
    memory = available_mib() if memory_mib is None else memory_mib
    by_cores = 1 + max(0, cores) // 2
    # Unknown memory: the cores alone decide.
    by_memory = (
        by_cores if memory is None else 1 + max(0, memory - MEMORY_RESERVE_MIB) // SIBLING_MIB
    )
    return max(1, min(by_cores, by_memory, DEFAULT_CAP))


def may_move(app: App, approach: Approach, plan: TrialPlan) -> bool:
    """Whether the trial can run on a sibling (see the module's docstring)."""
    spec = plan.experiment
    return (
        not spec.exclusive
        and not spec.cluster_wide
        and pointable(spec)
        and app.per_cluster_arm(approach)
    )


def siblings_wanted(clusters: int, movable: int, total: int) -> int:
    """How many siblings a run of `total` trials, `movable` of which may move, makes for at
    most `clusters` clusters: none that could never get a trial (the run's cluster takes
    one of them when every trial may move)."""
    if movable == 0:
        return 0
    spare = movable - 1 if movable == total else movable
    return max(0, min(clusters - 1, spare))


def next_start(
    queue: Sequence[TrialPlan],
    running: Mapping[str, Sequence[TrialPlan]],
    *,
    ready: Sequence[str],
    room: Callable[[TrialPlan], bool],
    movable: Callable[[TrialPlan], bool],
) -> tuple[TrialPlan, str] | None:
    """The next trial to start and where (`MAIN` or a sibling's name), in queue order; None:
    none can start now. `room`: whether the trial may start on the run's cluster now (its
    own rules: `--parallel`, exclusive experiments); `running`: the trials under way, per
    sibling; `ready`: the siblings ready for trials, in order. A sibling runs one trial at a
    time (its trials are those that cannot share a cluster)."""
    idle = next((name for name in ready if not running.get(name)), None)
    for plan in queue:
        if room(plan):
            return plan, MAIN
        if idle is not None and movable(plan):
            return plan, idle
    return None


def close_all(siblings: Sequence[SiblingCluster]) -> list[str]:
    """Stop and delete every sibling, side by side (a Ctrl-C's cleanup should not wait for one
    after another); what could not be, one line each."""
    if not siblings:
        return []
    with ThreadPoolExecutor(max_workers=len(siblings), thread_name_prefix="close") as pool:
        return [line for left in pool.map(lambda s: s.close(), siblings) for line in left]
