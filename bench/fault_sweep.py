"""Fault sweep of the toolkit's own processes: kill the operator, a Flux controller, etcd or
the API server at a random moment of a `compare run`, and check what must hold whatever
happens (issue 24 point 7):

- the run ends on its own (within --deadline seconds), exit 0, 1 or 130 - never hung;
- its results.json loads (never lost or half-written) and every trial has a status;
- a trial that overlapped an outage of the API server or etcd is never `no-fault` (the fault
  was not seen, it was not looked at);
- no namespace of the run is left behind.

Each round starts a small run (two experiments, the three approaches, a short window), waits a
random 2-30 s, kills one victim (SIGKILL; a control-plane component is started again after a
random 1-8 s, the operator and Flux are restarted by the run itself or the next trial), then
waits for the run. Prints one line per round and the counts per victim; exit 1 if any round
broke a rule. CPU cost: one small run per round (about a minute on 2 cores).

    .venv/bin/python bench/fault_sweep.py [--rounds 4] [--seed 1] [--cluster NAME]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from operator_common import add_cluster_args, bench_target

from compare.approaches.flux.controllers import FLUX
from compare.approaches.operator.controllers import operator_status
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.deploy.processes import read_process
from compare.results import RESULTS_FILE, load_results
from compare.run.trial import RUN_LABEL

VICTIMS = ("operator", "helm-controller", "source-controller", "etcd", "kube-apiserver")
COMPARE = str(Path(sys.executable).with_name("compare"))


def _kill_pid(pid: int | None) -> bool:
    if pid is None:
        return False
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


def _kill(target: ClusterTarget, victim: str, rng: random.Random) -> tuple[float, float | None]:
    """Kill `victim`; (when, until) - `until` is when a control-plane component was back."""
    at = time.time()
    if victim == "operator":
        handle = operator_status(target)
        _kill_pid(handle.pid if handle is not None else None)
        return at, None
    if victim in ("helm-controller", "source-controller"):
        info = read_process(FLUX.state_dir(target), victim)
        _kill_pid(info.pid if info is not None else None)
        return at, None
    cluster = EmbeddedCluster(cluster_key(target))
    cluster.stop_component(victim, kill=True)
    time.sleep(rng.uniform(1, 8))
    cluster.start_components()
    return at, time.time()


def _namespaces_left(target: ClusterTarget, run_id: str) -> list[str]:
    out = subprocess.run(
        [
            *("kubectl", "--kubeconfig", str(target.kubeconfig), "get", "namespaces"),
            *("-l", f"{RUN_LABEL}={run_id}", "-o", "json"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if out.returncode != 0:
        return [f"(kubectl failed: {out.stderr.strip()[:100]})"]
    items = json.loads(out.stdout).get("items") or []
    return [i["metadata"]["name"] for i in items if not i["metadata"].get("deletionTimestamp")]


def _restore(target: ClusterTarget) -> list[str]:
    """Start whatever control-plane component is down (kube-controller-manager and the
    scheduler exit when they lose their lease during an API outage, and nothing restarts them
    in the embedded cluster, as a kubelet would): the components that were down."""
    if not target.embedded:
        return []
    cluster = EmbeddedCluster(cluster_key(target))
    down = [
        c
        for c in ("kube-controller-manager", "kube-scheduler", "kwok-controller", "etcd")
        if cluster.component_pid(c) is None
    ]
    cluster.start_components()
    return down


def _round(
    target: ClusterTarget, victim: str, rng: random.Random, out: Path, deadline: float
) -> dict[str, Any]:
    restored_before = _restore(target)
    process = subprocess.Popen(
        [
            *(COMPARE, "run", "--kubeconfig", str(target.kubeconfig)),
            *("-e", "pod-delete-one", "-e", "image-change"),
            *("--heal-window", "10", "--parallel", "3", "--output", str(out)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    delay = rng.uniform(2, 30)
    until = time.monotonic() + delay
    while time.monotonic() < until and process.poll() is None:
        time.sleep(0.2)
    outage: tuple[float, float | None] | None = None
    if process.poll() is None:
        outage = _kill(target, victim, rng)
    try:
        _, stderr = process.communicate(timeout=deadline)
        ended = True
    except subprocess.TimeoutExpired:
        process.kill()
        _, stderr = process.communicate()
        ended = False
    problems: list[str] = []
    if not ended:
        problems.append(f"did not end within {deadline:g} s")
    elif process.returncode not in (0, 1, 130):
        problems.append(f"exit {process.returncode}: {stderr.strip().splitlines()[-1:]}")
    runs = sorted(out.glob(f"*/{RESULTS_FILE}"))
    statuses: dict[str, int] = {}
    if not runs:
        problems.append("no results.json")
    else:
        try:
            results = load_results(runs[-1])
        except Exception as exc:  # the sweep reports any failure to read, whatever it is
            problems.append(f"results.json unreadable: {exc}")
        else:
            for trial in results.trials:
                statuses[trial.status] = statuses.get(trial.status, 0) + 1
                if outage is not None and outage[1] is not None and trial.status == "no-fault":
                    injected = trial.injected_at.timestamp() if trial.injected_at else None
                    if injected is not None and outage[0] - 30 <= injected <= outage[1] + 30:
                        problems.append(f"{trial.experiment}/{trial.approach}: no-fault in outage")
            left = _namespaces_left(target, results.run_id)
            if left:
                problems.append(f"namespaces left: {', '.join(left)}")
    return {
        "victim": victim,
        "killed_after_s": round(delay, 1),
        "killed": outage is not None,
        "ended": ended,
        "exit": process.returncode,
        "statuses": statuses,
        "problems": problems,
        "down_before_round": restored_before,
        "stderr_tail": [x[:300] for x in stderr.strip().splitlines()[-8:]] if problems else [],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=len(VICTIMS))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--deadline", type=float, default=900.0)
    parser.add_argument("--victim", action="append", choices=VICTIMS, help="only these")
    add_cluster_args(parser)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    rounds: list[dict[str, Any]] = []
    with bench_target(args) as target, tempfile.TemporaryDirectory() as tmp:
        for i in range(args.rounds):
            victims = args.victim or VICTIMS
            victim = victims[i % len(victims)]
            row = _round(target, victim, rng, Path(tmp) / f"round-{i}", args.deadline)
            rounds.append(row)
            print(json.dumps(row), flush=True)
    per_victim: dict[str, int] = {}
    for row in rounds:
        per_victim[row["victim"]] = per_victim.get(row["victim"], 0) + 1
    broken = [r for r in rounds if r["problems"]]
    print(f"rounds: {len(rounds)}; per victim: {per_victim}; broken: {len(broken)}")
    sys.exit(1 if broken else 0)


if __name__ == "__main__":
    main()
