"""Shared by the operator benchmarks: which cluster, the operator process, WebApps, percentiles,
polling."""

from __future__ import annotations

import argparse
import json
import statistics
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client
from tabulate import tabulate

from compare.approaches import forget_cluster
from compare.approaches.operator.controllers import (
    OperatorHandle,
    apply_webapp,
    install_operator,
    operator_status,
    stop_operator,
)
from compare.approaches.operator.process import DEFAULT_INSTANCE
from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.cluster.target import check_reachable
from compare.deploy.processes import LocalProcess, read_process
from compare.errors import CompareError
from compare.webapp import API_GROUP, API_VERSION, PLURAL, WebApp, parse_webapp
from webapp_operator.builders import build_deployment, build_service

T = TypeVar("T")
APPLY_ATTEMPTS = 6
APPLY_WORKERS = 8
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
def bench_target(
    args: argparse.Namespace, *, audit_policy: str | None = None
) -> Iterator[ClusterTarget]:
    """The cluster to measure on; an embedded one started here is deleted afterwards.

    `audit_policy` turns on the API server's audit log of an embedded cluster created here.
    """
    if args.kubeconfig is not None:
        target = ClusterTarget(args.kubeconfig, None)
        check_reachable(target)
        yield target
        return
    cluster = EmbeddedCluster(args.cluster)
    started = not cluster.status().running
    status = cluster.up(audit_policy=audit_policy)
    target = ClusterTarget(status.kubeconfig, None, embedded=True)
    try:
        yield target
    finally:
        if started and not args.keep:
            # As `compare cluster down`: the local processes and their credentials go first.
            forget_cluster(target)
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


def operator_info(handle: OperatorHandle) -> LocalProcess:
    """The recorded local process behind `handle`: its pid and its health port."""
    info = read_process(handle.state_dir, DEFAULT_INSTANCE)
    assert info is not None and info.pid == handle.pid
    return info


def new_namespace(api: client.ApiClient, prefix: str) -> str:
    namespace = f"{prefix}-{uuid.uuid4().hex[:5]}"
    client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
    return namespace


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


def add_output_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")


def report(title: str, rows: Sequence[Sequence[Any]], headers: Sequence[str]) -> None:
    print(f"\n{title}")
    print(tabulate(rows, headers=list(headers), tablefmt="github", floatfmt=".2f"))


def write_json(path: Path | None, figures: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json.dumps(figures, indent=2, sort_keys=True) + "\n")
        print(f"\nfigures written to {path}")


def percentile(values: Sequence[float], q: float) -> float | None:
    """The q-th percentile (0..100, inclusive method); None without samples."""
    ordered = sorted(values)
    if not ordered:
        return None
    if len(ordered) == 1:
        return ordered[0]
    return statistics.quantiles(ordered, n=100, method="inclusive")[int(q) - 1]


def operator_pid(pid: int) -> int:
    """The operator process itself: the local runner records its supervisor
    (`compare.deploy.supervise`), whose one child is the operator; any other pid as given."""
    try:
        if b"compare.deploy.supervise" not in Path(f"/proc/{pid}/cmdline").read_bytes():
            return pid
    except OSError:
        return pid
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 1 and fields[1] == str(pid) and fields[0] != "Z":
            return int(stat.parent.name)
    return pid


def rss_mib(pid: int) -> float | None:
    """The operator's resident memory (VmRSS) in MiB; None once it is gone."""
    try:
        for line in Path(f"/proc/{operator_pid(pid)}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


class RssSampler:
    """Samples a process's VmRSS every `interval` seconds in a thread: (elapsed s, MiB)."""

    def __init__(self, pid: int, interval: float) -> None:
        self.pid = pid
        self.interval = interval
        self.samples: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="rss-sampler")
        self._start = time.monotonic()

    def __enter__(self) -> RssSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _sample(self) -> None:
        value = rss_mib(self.pid)
        if value is not None:
            self.samples.append((time.monotonic() - self._start, value))

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(self.interval):
                return

    @property
    def peak(self) -> float:
        return max((mib for _, mib in self.samples), default=0.0)


def counters(summary: dict[str, Any] | None) -> dict[str, int]:
    """The operator's reconcile counters from its /healthz summary."""
    summary = summary or {}
    return {key: int(summary.get(key, 0)) for key in ("reconciles", "changes", "failures")}


def counted(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """What each of the `counters` counted from `before` to `after`."""
    return {key: after[key] - before[key] for key in before}


def floor_objects(
    webapp: WebApp, namespace: str, owner: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The operator's children of `webapp`, as it builds them: with `owner` as their owner
    reference, or without any (the floor)."""
    ref = owner or {"apiVersion": "example.com/v1", "kind": "WebApp", "name": webapp.name}
    objects = [build_deployment(webapp, namespace, ref), build_service(webapp, namespace, ref)]
    if owner is None:
        for obj in objects:
            del obj["metadata"]["ownerReferences"]
    return objects


def make_webapp(name: str, **spec: Any) -> WebApp:
    return parse_webapp(
        {"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": {"name": name}, "spec": spec}
    )


def webapp_running(obj: Mapping[str, Any]) -> bool:
    """Whether a WebApp's status reports phase Running for its generation."""
    status = obj.get("status") or {}
    return bool(
        status.get("phase") == "Running"
        and status.get("observedGeneration") == (obj.get("metadata") or {}).get("generation")
    )


def running_webapps(api: client.ApiClient, namespace: str) -> int:
    """WebApps whose status reports phase Running for their generation."""
    items = client.CustomObjectsApi(api).list_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL
    )["items"]
    return sum(1 for i in items if webapp_running(i))


class Applier:
    """Applies WebApps; a webhook call that timed out (the operator's webhook shares its busy
    process) is retried, and counted."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.retries = 0
        self._lock = threading.Lock()

    def __call__(self, webapp: WebApp) -> None:
        for attempt in range(APPLY_ATTEMPTS):
            try:
                apply_webapp(self.api, webapp, self.namespace)
                return
            except CompareError as exc:
                if "failed calling webhook" not in exc.message or attempt == APPLY_ATTEMPTS - 1:
                    raise
                with self._lock:
                    self.retries += 1
                time.sleep(0.5 * 2**attempt)


def apply_webapps(
    api: client.ApiClient, namespace: str, webapps: Iterable[WebApp], workers: int = APPLY_WORKERS
) -> int:
    """Apply the WebApps from a pool of `workers` threads; the applies retried (`Applier`)."""
    applier = Applier(api, namespace)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(applier, webapps))
    return applier.retries
