"""Benchmark: `compare cluster up` versus bare `kwokctl create cluster`, same binaries.

Prints wall times per repetition, the medians and their ratio (the toolkit's overhead:
binary check, readiness probe, kwok nodes). Never passes or fails on time.

    .venv/bin/python bench/cluster_up.py [--reps 5] [--name bench]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from compare.cluster import EmbeddedCluster, ensure_binaries, tool_path

COMPARE = str(Path(sys.executable).with_name("compare"))


def timed(cmd: list[str], env: dict[str, str] | None = None) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, env=env, capture_output=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--name", default="bench", help="cluster name prefix")
    args = parser.parse_args()
    ensure_binaries()
    ours, bare = [], []
    for rep in range(args.reps):
        name = f"{args.name}-compare"
        ours.append(timed([COMPARE, "cluster", "up", "--name", name, "--nodes", "1"]))
        subprocess.run(
            [COMPARE, "cluster", "down", "--name", name], check=True, capture_output=True
        )

        raw = EmbeddedCluster(f"{args.name}-bare")
        kwokctl = [tool_path("kwokctl"), "--name", raw.name]
        create = [*kwokctl, "create", "cluster", "--runtime", "binary", "--kubeconfig", "",
                  "--kube-authorization=true", "--kube-admission=true", "--wait", "2m"]  # fmt: skip
        bare.append(timed(create, env=raw.env()))
        subprocess.run(
            [*kwokctl, "delete", "cluster"], env=raw.env(), check=True, capture_output=True
        )
        print(
            f"rep {rep + 1}: compare cluster up {ours[-1]:.2f}s, kwokctl create {bare[-1]:.2f}s"
            f" (load {os.getloadavg()[0]:.1f})"
        )
    m_ours, m_bare = statistics.median(ours), statistics.median(bare)
    print(f"median: compare cluster up {m_ours:.2f}s, bare kwokctl {m_bare:.2f}s, "
          f"ratio {m_ours / m_bare:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
