"""Benchmark: leader failover and graceful handover between two operator replicas.

Per trial: the leader runs, a standby waits on the same Lease; SIGKILL the leader and time
until the standby reports itself leading and ready (kopf watching, webhook listening). Then
SIGTERM the new leader (it releases the Lease) and time until a fresh process leads. Lease
timings are the operator's defaults unless given. Prints n, p50, p95, min, max; never passes
or fails.

    .venv/bin/python bench/operator_failover.py [--trials 5] [--lease-duration 15]
                                                [--cluster NAME | --kubeconfig FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from functools import partial

from operator_common import add_cluster_args, bench_target, summary, wait_for

from compare.approaches.operator.controllers import install_operator, start_operator, stop_operator
from compare.approaches.operator.process import (
    DEFAULT_INSTANCE,
    OPERATOR,
    OperatorOptions,
    health,
    is_ready,
    spawn_operator,
)
from compare.deploy.local import free_port
from compare.deploy.processes import LocalProcess, read_process, terminate


def _role_is(info: LocalProcess, role: str) -> bool:
    return (health(info) or {}).get("role") == role


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--lease-duration", type=float, default=15.0)
    parser.add_argument("--lease-renew-deadline", type=float, default=10.0)
    parser.add_argument("--lease-retry-period", type=float, default=2.0)
    add_cluster_args(parser)
    args = parser.parse_args()
    options = OperatorOptions(
        lease_duration=args.lease_duration,
        lease_renew_deadline=args.lease_renew_deadline,
        lease_retry_period=args.lease_retry_period,
    )
    with bench_target(args) as target:
        stop_operator(target)
        install_operator(target, options=options)
        directory = OPERATOR.state_dir(target)
        settings = json.loads((directory / "settings.json").read_text())
        print(
            f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, lease "
            f"{options.lease_duration:g}/{options.lease_renew_deadline:g}/"
            f"{options.lease_retry_period:g} s (duration/renew deadline/retry)"
        )
        failovers: list[float] = []
        handovers: list[float] = []
        try:
            for trial in range(args.trials):
                leader = read_process(directory, DEFAULT_INSTANCE)
                assert leader is not None
                standby = spawn_operator(
                    directory,
                    instance="standby",
                    kubeconfig=directory / "kubeconfig.yaml",
                    health_port=free_port(),
                    webhook_port=settings.get("webhook_port"),
                    cert_dir=directory / "certs",
                    options=options,
                    identity=f"bench-standby-{trial}",
                )
                wait_for(
                    partial(_role_is, standby, "standby"),
                    timeout=60,
                    what="standby",
                )
                killed = time.perf_counter()
                terminate(leader, kill=True)
                wait_for(
                    partial(is_ready, standby),
                    timeout=args.lease_duration + 60,
                    what="standby leading",
                    poll=0.01,
                )
                failovers.append(time.perf_counter() - killed)

                stopped = time.perf_counter()
                terminate(standby)
                start_operator(target, options=options)
                handovers.append(time.perf_counter() - stopped)
                print(
                    f"  trial {trial + 1}: failover {failovers[-1]:.2f} s, "
                    f"graceful handover {handovers[-1]:.2f} s",
                    flush=True,
                )
        finally:
            info = read_process(directory, "standby")
            if info is not None:
                terminate(info, kill=True)
            stop_operator(target)
        print("SIGKILL leader -> standby leading and ready")
        print(f"  {summary(failovers)}")
        print("SIGTERM leader (Lease released) -> a new process leading and ready")
        print(f"  {summary(handovers)}")


if __name__ == "__main__":
    main()
