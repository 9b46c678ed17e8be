"""Benchmark: are the verdicts repeatable? The default catalogue run N times in one process.

One process, one cluster (its own embedded cluster `bench-stability`, started here and deleted
afterwards, unless --kubeconfig names another): the default run (whole catalogue, the default
approaches, 1 trial, the default heal window with each approach's cadence added, as
`compare run` does) repeated --reps times through the engine. Printed: each approach's trial
window, and per cell (fault x approach) whether every verdict agreed, the verdicts seen, and
the p50 and maximum of the time-to-heal over the reps, with its spread (max - min) relative
to the p50; then per approach the cells with the same verdict in every rep. Goal: identical
verdicts in every cell. `--exact-heal-window` measures without the cadence (the old
behaviour); `--deadline` starts no rep after that many seconds. Never fails.

    .venv/bin/python bench/verdict_stability.py [--reps 5] [--heal-window 10]
        [--exact-heal-window] [--parallel 12] [--deadline SECONDS]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from operator_common import add_cluster_args, bench_target

from compare.approaches import builtin_target, default_names
from compare.run import DEFAULT_HEAL_WINDOW_S, DEFAULT_PARALLEL, RunRequest
from compare.run.app import App
from compare.run.engine import Run, heal_windows
from compare.run.experiments import load_experiments
from compare.webapp import DEFAULT_APP, load_webapp

BENCH_CLUSTER = "bench-stability"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--heal-window", type=float, default=DEFAULT_HEAL_WINDOW_S)
    parser.add_argument("--exact-heal-window", action="store_true")
    parser.add_argument("--parallel", type=int, default=None)
    parser.add_argument(
        "--deadline", type=float, default=None, help="start no rep after this many seconds"
    )
    add_cluster_args(parser)
    parser.set_defaults(cluster=BENCH_CLUSTER)
    args = parser.parse_args()

    verdicts: dict[tuple[str, str], list[str]] = defaultdict(list)
    heals: dict[tuple[str, str], list[float]] = defaultdict(list)
    with (
        bench_target(args) as target,
        tempfile.TemporaryDirectory(prefix="bench-stability-") as tmp,
    ):
        began = time.perf_counter()
        reps = 0
        for rep in range(args.reps):
            if args.deadline is not None and time.perf_counter() - began > args.deadline:
                print(f"deadline: {args.deadline:g} s passed, no rep {rep + 1}", flush=True)
                break
            request = RunRequest(
                approaches=default_names(),
                experiments=tuple(load_experiments(())),
                app=App(builtin_target(load_webapp(DEFAULT_APP), DEFAULT_APP)),
                output_dir=Path(tmp),
                heal_window=args.heal_window,
                exact_heal_window=args.exact_heal_window,
                parallel=args.parallel or DEFAULT_PARALLEL,
            )
            if rep == 0:
                windows = ", ".join(
                    f"{name} {w.heal_window_seconds:g} s"
                    for name, w in heal_windows(request).items()
                )
                print(f"heal windows: {windows}", flush=True)
            start = time.perf_counter()
            results = Run(target, request).execute()
            wall = time.perf_counter() - start
            reps += 1
            print(f"rep {rep + 1}: {len(results.trials)} trials in {wall:.1f} s", flush=True)
            for t in results.trials:
                verdicts[(t.experiment, t.approach)].append(t.status)
                if t.time_to_heal_seconds is not None:
                    heals[(t.experiment, t.approach)].append(t.time_to_heal_seconds)
    agree = 0
    print(f"\n{'fault':28} {'approach':9} {'agree':6} {'verdicts':28} p50 s   max s   spread")
    for (fault, approach), seen in sorted(verdicts.items()):
        same = len(set(seen)) == 1
        agree += same
        times = heals.get((fault, approach), [])
        p50 = statistics.median(times) if times else None
        spread = (max(times) - min(times)) / p50 if times and p50 else None
        print(
            f"{fault:28} {approach:9} {'yes' if same else 'NO':6} "
            f"{','.join(sorted(set(seen))):28} "
            f"{'-' if p50 is None else f'{p50:.3f}':7} "
            f"{f'{max(times):.3f}' if times else '-':7} "
            f"{'-' if spread is None else f'{spread * 100:.0f} %'}"
        )
    print(f"\n{agree}/{len(verdicts)} cells with identical verdicts over {reps} reps")
    for approach in dict.fromkeys(a for _, a in sorted(verdicts)):
        cells = {k: v for k, v in verdicts.items() if k[1] == approach}
        identical = sum(len(set(v)) == 1 for v in cells.values())
        flipped = sorted(f for (f, _), v in cells.items() if len(set(v)) > 1)
        print(
            f"  {approach}: {identical}/{len(cells)} cells identical"
            + (f"; flipped: {', '.join(flipped)}" if flipped else "")
        )


if __name__ == "__main__":
    main()
