"""Benchmark: wall time of the default `compare run` and how it scales with --parallel.

The default run is the whole catalogue against the three approaches (helm, operator, flux),
1 trial, a 10 s heal window and the default settle period. Each figure is one real
`compare run` (the CLI, as a subprocess) against one cluster: its own embedded cluster
`bench-run` (started here, deleted afterwards) unless --kubeconfig names another. Printed per
--parallel value: wall time, the floor that the unhealed windows impose (trials that wait out
the window x window / parallel), trials healed / not healed / no-fault / error, the median
time-to-heal, the CPU time the `compare` process used (user + system: waiting on watches should
cost almost none), the machine's load average before the run, and the healed count per
approach. Never passes or fails. With --output the run directories are kept there (to make a
sample report of them).

With --tunings (e.g. `--tunings kwokctl throughput --parallel 12`) every run gets a fresh
embedded cluster with that control-plane tuning (see compare/cluster/embedded.py), the tunings
alternating back to back; the verdicts (experiment, approach -> status) of each run are compared
with the first run's and every difference is printed.

    .venv/bin/python bench/run_catalogue.py [--parallel 4 8 16] [--heal-window 10]
                                            [--kubeconfig FILE] [--reps 1] [--output DIR]
                                            [--tunings kwokctl throughput] [--name bench-run]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from compare.approaches import forget_cluster
from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.cluster.embedded import TUNINGS
from compare.results import STATUSES, latest_run, load_results

COMPARE = str(Path(sys.executable).with_name("compare"))
BENCH_CLUSTER = "bench-run"


Verdicts = dict[tuple[str, str, int], str]


def one_run(kubeconfig: Path, parallel: int, window: float, out: Path) -> tuple[str, Verdicts]:
    load = os.getloadavg()[0]
    start = time.perf_counter()
    cpu_before = os.times()
    done = subprocess.run(
        [COMPARE, "run", "--kubeconfig", str(kubeconfig), "--parallel", str(parallel),
         "--heal-window", str(window), "--output", str(out)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    wall = time.perf_counter() - start
    cpu_after = os.times()
    cpu = (cpu_after.children_user - cpu_before.children_user) + (
        cpu_after.children_system - cpu_before.children_system
    )
    if done.returncode not in (0, 1):
        return (
            f"parallel {parallel}: compare run failed ({done.returncode}): {done.stderr[-300:]}",
            {},
        )
    results = load_results(latest_run(out))
    if not results.complete:
        return f"parallel {parallel}: the run did not complete: {done.stderr[-300:]}", {}
    verdicts: Verdicts = {
        (t.experiment, t.approach, t.trial): str(t.status) for t in results.trials
    }
    count = {s: sum(t.status == s for t in results.trials) for s in STATUSES}
    heals = [t.time_to_heal_seconds for t in results.trials if t.time_to_heal_seconds is not None]
    waited = count["not-healed"] + count["no-fault"]
    floor = waited * window / parallel
    per_approach = ", ".join(
        f"{approach} {sum(t.status == 'healed' for t in results.trials if t.approach == approach)}"
        f"/{sum(t.approach == approach for t in results.trials)}"
        for approach in results.settings.approaches
    )
    return (
        f"parallel {parallel}: {wall:6.1f} s wall (unhealed-window floor {floor:5.1f} s),"
        f" {len(results.trials)} trials: {count['healed']} healed, {count['not-healed']} not"
        f" healed, {count['no-fault']} no-fault, {count['error']} error;"
        f" median heal {statistics.median(heals or [0.0]):.2f} s;"
        f" compare CPU {cpu:.1f} s; load before {load:.1f}, after {os.getloadavg()[0]:.1f};"
        f" healed: {per_approach}"
    ), verdicts


def differences(first: Verdicts, other: Verdicts) -> str:
    diff = [
        f"{exp}/{approach}#{trial}: {first.get((exp, approach, trial))} -> {status}"
        for (exp, approach, trial), status in sorted(other.items())
        if first.get((exp, approach, trial)) != status
    ]
    diff += [f"{key[0]}/{key[1]}#{key[2]}: missing" for key in sorted(set(first) - set(other))]
    return (
        "verdicts identical to the first run's"
        if not diff
        else "verdicts differ: " + "; ".join(diff)
    )


def tuned_runs(args: argparse.Namespace, tmp: Path) -> None:
    """Each run on a fresh cluster of its tuning, tunings alternating; verdicts compared."""
    first: Verdicts | None = None
    for rep in range(args.reps):
        for tuning in args.tunings:
            for parallel in args.parallel:
                cluster = EmbeddedCluster(f"{args.name}-{tuning}")
                if cluster.status().exists:
                    forget_cluster(ClusterTarget(cluster.kubeconfig, None, embedded=True))
                    cluster.down()
                kubeconfig = cluster.up(tuning=tuning).kubeconfig
                try:
                    out = (args.output or tmp) / f"{rep}-{tuning}-{parallel}"
                    line, verdicts = one_run(kubeconfig, parallel, args.heal_window, out)
                finally:
                    forget_cluster(ClusterTarget(kubeconfig, None, embedded=True))
                    cluster.down()
                if first is None:
                    first = verdicts
                    note = "the reference verdicts"
                else:
                    note = differences(first, verdicts)
                print(f"tuning {tuning}, {line}; {note}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--parallel", type=int, nargs="+", default=[4, 8, 16])
    parser.add_argument("--heal-window", type=float, default=10.0)
    parser.add_argument("--kubeconfig", type=Path, default=None)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--output", type=Path, default=None, help="keep the runs here")
    parser.add_argument("--tunings", nargs="+", choices=sorted(TUNINGS), default=None)
    parser.add_argument("--name", default=BENCH_CLUSTER, help="cluster name (prefix)")
    args = parser.parse_args()
    if args.tunings:
        print(f"cpus {os.cpu_count()}, heal window {args.heal_window:g} s, tunings {args.tunings}")
        with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
            tuned_runs(args, Path(tmp))
        return

    own = None
    kubeconfig = args.kubeconfig
    if kubeconfig is None:
        own = EmbeddedCluster(args.name)
        kubeconfig = own.up().kubeconfig
    print(f"cpus {os.cpu_count()}, heal window {args.heal_window:g} s, cluster {kubeconfig}")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-run-") as tmp:
            for rep in range(args.reps):
                for parallel in args.parallel:
                    out = (args.output or Path(tmp)) / f"{rep}-{parallel}"
                    print(one_run(kubeconfig, parallel, args.heal_window, out)[0], flush=True)
    finally:
        if own is not None:
            # As `compare cluster down`: the local processes and their credentials go first.
            forget_cluster(ClusterTarget(kubeconfig, None, embedded=True))
            own.down()


if __name__ == "__main__":
    main()
