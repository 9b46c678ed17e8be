"""Benchmark: are the verdicts repeatable? The default catalogue run N times in one process.

One process, one cluster (its own embedded cluster `bench-stability`, started here and deleted
afterwards, unless --kubeconfig names another): the default run (whole catalogue, both
approaches, 1 trial, 10 s heal window) repeated --reps times through the engine. Printed per
cell (fault x approach): whether every verdict agreed, the verdicts seen, and the p50 of the
time-to-heal over the reps with its spread (max - min) relative to the p50. Goal: identical
verdicts in every cell; p50 within +/-20 % where the heal is not a rollout. Never fails.

    .venv/bin/python bench/verdict_stability.py [--reps 5] [--heal-window 10] [--parallel 8]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from operator_common import add_cluster_args, bench_target

from compare.run import DEFAULT_PARALLEL, RunRequest
from compare.run.app import BuiltinApp
from compare.run.engine import Run
from compare.run.experiments import load_experiments
from compare.webapp import DEFAULT_APP, load_webapp

BENCH_CLUSTER = "bench-stability"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--heal-window", type=float, default=10.0)
    parser.add_argument("--parallel", type=int, default=None)
    add_cluster_args(parser)
    parser.set_defaults(cluster=BENCH_CLUSTER)
    args = parser.parse_args()

    verdicts: dict[tuple[str, str], list[str]] = defaultdict(list)
    heals: dict[tuple[str, str], list[float]] = defaultdict(list)
    with (
        bench_target(args) as target,
        tempfile.TemporaryDirectory(prefix="bench-stability-") as tmp,
    ):
        for rep in range(args.reps):
            request = RunRequest(
                approaches=("helm", "operator"),
                experiments=tuple(load_experiments(())),
                app=BuiltinApp(load_webapp(DEFAULT_APP), DEFAULT_APP),
                output_dir=Path(tmp),
                heal_window=args.heal_window,
                parallel=args.parallel or DEFAULT_PARALLEL,
            )
            start = time.perf_counter()
            results = Run(target, request).execute()
            wall = time.perf_counter() - start
            print(f"rep {rep + 1}: {len(results.trials)} trials in {wall:.1f} s", flush=True)
            for t in results.trials:
                verdicts[(t.experiment, t.approach)].append(t.status)
                if t.time_to_heal_seconds is not None:
                    heals[(t.experiment, t.approach)].append(t.time_to_heal_seconds)
    agree = 0
    print(f"\n{'fault':28} {'approach':9} {'agree':6} {'verdicts':28} p50 s   spread")
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
            f"{'-' if spread is None else f'{spread * 100:.0f} %'}"
        )
    print(f"\n{agree}/{len(verdicts)} cells with identical verdicts over {args.reps} reps")


if __name__ == "__main__":
    main()
