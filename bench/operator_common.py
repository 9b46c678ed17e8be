"""Shared by the operator benchmarks: which cluster, percentiles, polling."""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

from kubernetes import client

from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.cluster.target import check_reachable
from compare.deploy.operator import (
    OperatorHandle,
    install_operator,
    operator_status,
    stop_operator,
)

T = TypeVar("T")
BENCH_CLUSTER = "bench-operator"


def add_cluster_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--cluster",
        default=BENCH_CLUSTER,
        help=f"embedded cluster to use (default {BENCH_CLUSTER}; started if needed)",
    )
    parser.add_argument("--kubeconfig", type=Path, help="use this cluster instead")
    parser.add_argument(
        "--keep", action="store_true", help="leave a cluster this script started running"
    )


@contextmanager
def bench_target(args: argparse.Namespace) -> Iterator[ClusterTarget]:
    """The cluster to measure on; an embedded one started here is deleted afterwards."""
    if args.kubeconfig is not None:
        target = ClusterTarget(args.kubeconfig, None)
        check_reachable(target)
        yield target
        return
    cluster = EmbeddedCluster(args.cluster)
    started = not cluster.status().running
    status = cluster.up()
    try:
        yield ClusterTarget(status.kubeconfig, None, embedded=True)
    finally:
        if started and not args.keep:
            cluster.down()


@contextmanager
def operator_running(target: ClusterTarget) -> Iterator[OperatorHandle]:
    """The cluster's local operator; stopped afterwards if this script started it."""
    before = operator_status(target)
    handle = install_operator(target)
    try:
        yield handle
    finally:
        if before is None or not before.running:
            stop_operator(target)


def delete_namespace(api: client.ApiClient, namespace: str, timeout: float = 120) -> None:
    """Delete and wait: its WebApps' finalizers need the operator, which may stop next."""
    core = client.CoreV1Api(api)
    core.delete_namespace(namespace)

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    wait_for(gone, timeout=timeout, what=f"namespace {namespace} deleted")


def summary(values: Sequence[float], unit: str = "s") -> str:
    """n, p50, p95, min, max."""
    ordered = sorted(values)
    if not ordered:
        return "no samples"
    p95 = statistics.quantiles(ordered, n=20, method="inclusive")[-1] if len(ordered) > 1 else 0
    return (
        f"n={len(ordered):3d}  p50 {statistics.median(ordered):7.3f} {unit}  "
        f"p95 {p95:7.3f} {unit}  min {ordered[0]:7.3f} {unit}  max {ordered[-1]:7.3f} {unit}"
    )


def wait_for(probe: Callable[[], T | None], *, timeout: float, what: str, poll: float = 0.05) -> T:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(poll)
    raise SystemExit(f"timed out after {timeout:.0f}s waiting for {what}")
