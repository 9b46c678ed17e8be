"""Benchmark: how fast the embedded control plane brings N one-replica Deployments to Ready.

For each tuning (default: kwokctl's own defaults, then the toolkit's throughput tuning; with
--reps the two alternate, back to back) a fresh embedded cluster is started, N Deployments of
one replica are created (8 client threads), and the script waits until every Deployment's
rollout is complete with its pod Ready; then the cluster is deleted. Printed per run:

- wall time until all Ready and pods/s; the load average before and after (the machine is
  shared: compare runs only side by side);
- where a pod's time went: per stage (Deployment created -> ReplicaSet created -> pod created
  -> pod scheduled -> pod Ready) the seconds after the first Deployment by which half and all
  objects had reached it (object timestamps, 1 s resolution): the stage whose curve is the
  slowest is the one that binds;
- the components' own metrics, deltas over the run: kube-apiserver request latency p50/p99
  (apiserver_request_duration_seconds, every verb but WATCH/CONNECT) and APF queueing/rejections,
  seconds kube-controller-manager and kube-scheduler waited in their client rate limiters
  (rest_client_rate_limiter_duration_seconds), the deployment/replicaset workqueues' mean
  queue time, the CPU seconds each component used and its peak resident memory (VmHWM).

Never passes or fails on time.

    .venv/bin/python bench/cluster_throughput.py [--count 1000] [--reps 1]
        [--tunings kwokctl throughput] [--name bench-tp] [--arg COMPONENT:FLAG=VALUE ...]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import multiprocessing.queues
import os
import ssl
import statistics
import subprocess
import time
import urllib.request
from collections import defaultdict
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from pathlib import Path
from typing import Any

from kubernetes import client

from compare.approaches import forget_cluster
from compare.cluster import ClusterTarget, EmbeddedCluster, tool_path
from compare.cluster.embedded import TUNINGS, ControlPlaneArg, parse_control_plane_args

NAMESPACE = "bench-throughput"
WORKERS = 8
TIMEOUT_S = 900.0
PROBE_S = 0.25
# kube-apiserver's long-running requests are not latency: leave them out of the percentiles.
LONG_RUNNING_VERBS = {"WATCH", "CONNECT"}
Metrics = dict[str, list[tuple[dict[str, str], float]]]


# -- Prometheus text format -------------------------------------------------------------------


def parse_metrics(text: str, wanted: Iterable[str]) -> Metrics:
    """The samples of the wanted metric names (histograms: their _bucket/_sum/_count)."""
    prefixes = tuple(wanted)
    out: Metrics = defaultdict(list)
    for line in text.splitlines():
        if not line or line.startswith("#") or not line.startswith(prefixes):
            continue
        head, _, value = line.rpartition(" ")
        name, _, label_text = head.partition("{")
        labels = {}
        for part in _split_labels(label_text.rstrip("}")):
            key, _, val = part.partition("=")
            labels[key] = val.strip('"')
        out[name].append((labels, float(value)))
    return out


def _split_labels(text: str) -> list[str]:
    parts, current, quoted = [], "", False
    for char in text:
        if char == '"':
            quoted = not quoted
        if char == "," and not quoted:
            parts.append(current)
            current = ""
        else:
            current += char
    return [p for p in [*parts, current] if p]


def total(
    metrics: Metrics, name: str, keep: Callable[[dict[str, str]], bool] = lambda _: True
) -> float:
    return sum(v for labels, v in metrics.get(name, []) if keep(labels))


def buckets(
    metrics: Metrics, name: str, keep: Callable[[dict[str, str]], bool] = lambda _: True
) -> dict[float, float]:
    merged: dict[float, float] = defaultdict(float)
    for labels, value in metrics.get(f"{name}_bucket", []):
        if keep(labels):
            merged[float(labels["le"])] += value
    return merged


def quantile(before: dict[float, float], after: dict[float, float], q: float) -> float | None:
    """histogram_quantile over the delta of two cumulative bucket snapshots."""
    delta = sorted((le, after[le] - before.get(le, 0.0)) for le in after)
    if not delta or delta[-1][1] <= 0:
        return None
    rank, lower, below = q * delta[-1][1], 0.0, 0.0
    for le, count in delta:
        if count >= rank:
            if le == float("inf"):
                return lower
            return lower + (le - lower) * (rank - below) / max(count - below, 1e-9)
        lower, below = le, count
    return lower


# -- reading the components -------------------------------------------------------------------


def apiserver_metrics(cluster: EmbeddedCluster) -> Metrics:
    raw = subprocess.run(
        [tool_path("kubectl"), "--kubeconfig", str(cluster.kubeconfig), "get", "--raw", "/metrics"],
        capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    return parse_metrics(
        raw.stdout,
        ["apiserver_request_duration_seconds", "apiserver_flowcontrol_", "apiserver_request_total"],
    )


def component_metrics(cluster: EmbeddedCluster, component: str) -> Metrics:
    """A component's /metrics on its loopback port (kwokctl allows /metrics without authz;
    the admin client certificate authenticates)."""
    ports = cluster.component_ports(component)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE  # the component's self-signed serving cert, loopback
    pki = cluster.cluster_dir / "pki"
    context.load_cert_chain(pki / "admin.crt", pki / "admin.key")
    for port in ports:
        try:
            with urllib.request.urlopen(
                f"https://127.0.0.1:{port}/metrics", context=context, timeout=10
            ) as resp:
                return parse_metrics(
                    resp.read().decode(),
                    ["rest_client_", "workqueue_", "scheduler_schedule_attempts"],
                )
        except OSError:
            continue
    return {}


def cpu_seconds(cluster: EmbeddedCluster) -> dict[str, float]:
    ticks = os.sysconf("SC_CLK_TCK")
    out = {}
    for component in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                      "kwok-controller"):  # fmt: skip
        pid = cluster.component_pid(component)
        if pid is None:
            continue
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        out[component] = (int(fields[11]) + int(fields[12])) / ticks
    return out


def peak_rss_mib(cluster: EmbeddedCluster) -> dict[str, float]:
    """Each component's peak resident memory so far (VmHWM): what a GOGC setting costs."""
    out = {}
    for component in ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler",
                      "kwok-controller"):  # fmt: skip
        pid = cluster.component_pid(component)
        if pid is None:
            continue
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                out[component] = int(line.split()[1]) / 1024
    return out


def snapshot(cluster: EmbeddedCluster) -> dict[str, Any]:
    return {
        "apiserver": apiserver_metrics(cluster),
        "kcm": component_metrics(cluster, "kube-controller-manager"),
        "scheduler": component_metrics(cluster, "kube-scheduler"),
        "cpu": cpu_seconds(cluster),
        "rss": peak_rss_mib(cluster),
    }


class Prober:
    """A user's view of responsiveness: one small GET every PROBE_S, timed, during the load.

    In a process of its own: in this one the 8 creating threads would hold the GIL and the
    probe would time Python, not the API server."""

    def __init__(self, kubeconfig: Path) -> None:
        self.kubeconfig = kubeconfig
        self.latencies: list[float] = []
        self._stop = multiprocessing.Event()
        self._results: multiprocessing.queues.Queue[list[float]] = multiprocessing.Queue()
        self._process = multiprocessing.Process(target=self._run, daemon=True)

    def __enter__(self) -> Prober:
        self._process.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self.latencies = self._results.get(timeout=30)
        self._process.join(timeout=30)

    def _run(self) -> None:
        api = ClusterTarget(self.kubeconfig, None, embedded=True).api_client()
        core, latencies = client.CoreV1Api(api), []
        while not self._stop.wait(PROBE_S):
            start = time.perf_counter()
            core.read_namespace(NAMESPACE, _preload_content=False)
            latencies.append(time.perf_counter() - start)
        self._results.put(latencies)


# -- the workload -----------------------------------------------------------------------------


def deployment(name: str) -> dict[str, Any]:
    labels = {"app": name}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "app", "image": "web:v1"}]},
            },
        },
    }


def raw_items(call: Callable[..., Any]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = json.loads(call(NAMESPACE, _preload_content=False).data)["items"]
    return items


def ready_count(apps: client.AppsV1Api) -> int:
    done = 0
    for dep in raw_items(apps.list_namespaced_deployment):
        status = dep.get("status") or {}
        if (
            status.get("observedGeneration") == dep["metadata"]["generation"]
            and status.get("readyReplicas", 0) == 1
            and status.get("updatedReplicas", 0) == 1
        ):
            done += 1
    return done


def wait_namespace_ready(core: client.CoreV1Api, deadline: float) -> None:
    """Pods need the namespace's default ServiceAccount (made by kcm) to pass admission."""
    while time.monotonic() < deadline:
        try:
            core.read_namespaced_service_account("default", NAMESPACE)
            return
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        time.sleep(0.1)
    raise TimeoutError("the namespace's default ServiceAccount never appeared")


def stamp(text: str | None) -> float | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() if text else None


def condition_time(pod: dict[str, Any], kind: str) -> float | None:
    for cond in (pod.get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind and cond.get("status") == "True":
            return stamp(cond.get("lastTransitionTime"))
    return None


def stages(api: client.ApiClient) -> dict[str, list[float]]:
    """Per stage, the times (epoch s) each object reached it."""
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    pods = raw_items(core.list_namespaced_pod)
    times = {
        "deployment created": [stamp(d["metadata"]["creationTimestamp"])
                               for d in raw_items(apps.list_namespaced_deployment)],
        "replicaset created": [stamp(r["metadata"]["creationTimestamp"])
                               for r in raw_items(apps.list_namespaced_replica_set)],
        "pod created": [stamp(p["metadata"]["creationTimestamp"]) for p in pods],
        "pod scheduled": [condition_time(p, "PodScheduled") for p in pods],
        "pod ready": [condition_time(p, "Ready") for p in pods],
    }  # fmt: skip
    return {k: sorted(t for t in v if t is not None) for k, v in times.items()}


# -- one run ----------------------------------------------------------------------------------


def one_run(name: str, tuning: str, count: int, args: list[ControlPlaneArg]) -> dict[str, Any]:
    cluster = EmbeddedCluster(name)
    if cluster.status().exists:
        cluster.down()
    load_before = os.getloadavg()
    up_start = time.perf_counter()
    status = cluster.up(tuning=tuning, extra_args=args)
    up_s = time.perf_counter() - up_start
    target = ClusterTarget(status.kubeconfig, None, embedded=True)
    api = target.api_client()
    try:
        apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
        core.create_namespace({"metadata": {"name": NAMESPACE}})
        wait_namespace_ready(core, time.monotonic() + 60)
        before = snapshot(cluster)
        start = time.perf_counter()
        with Prober(status.kubeconfig) as prober, ThreadPoolExecutor(max_workers=WORKERS) as pool:
            list(pool.map(
                lambda i: apps.create_namespaced_deployment(
                    NAMESPACE, deployment(f"d-{i:05d}"), _preload_content=False
                ),
                range(count),
            ))  # fmt: skip
            created_s = time.perf_counter() - start
            deadline = time.monotonic() + TIMEOUT_S
            ready = 0
            while (ready := ready_count(apps)) < count:
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            ready_s = time.perf_counter() - start
        after = snapshot(cluster)
        timeline = stages(api)
    finally:
        api.close()
        forget_cluster(target)
        cluster.down()
    return {
        "tuning": tuning,
        "count": count,
        "ready": ready,
        "cluster_up_s": up_s,
        "created_s": created_s,
        "ready_s": ready_s,
        "pods_per_s": ready / ready_s,
        "load_before": load_before,
        "load_after": os.getloadavg(),
        "timeline": timeline,
        "probe_s": sorted(prober.latencies),
        "before": before,
        "after": after,
    }


# -- the report -------------------------------------------------------------------------------


def not_long_running(labels: dict[str, str]) -> bool:
    return labels.get("verb") not in LONG_RUNNING_VERBS


def mutating(labels: dict[str, str]) -> bool:
    return labels.get("verb") in {"POST", "PUT", "PATCH", "DELETE"}


def latency(run: dict[str, Any], keep: Callable[[dict[str, str]], bool], q: float) -> str:
    name = "apiserver_request_duration_seconds"
    value = quantile(
        buckets(run["before"]["apiserver"], name, keep),
        buckets(run["after"]["apiserver"], name, keep),
        q,
    )
    return "n/a" if value is None else f"{value * 1000:.0f} ms"


def delta(run: dict[str, Any], part: str, name: str,
          keep: Callable[[dict[str, str]], bool] = lambda _: True) -> float:  # fmt: skip
    return total(run["after"][part], name, keep) - total(run["before"][part], name, keep)


def queue_mean(run: dict[str, Any], queue: str) -> str:
    def keep(labels: dict[str, str]) -> bool:
        return labels.get("name") == queue

    count = delta(run, "kcm", "workqueue_queue_duration_seconds_count", keep)
    seconds = delta(run, "kcm", "workqueue_queue_duration_seconds_sum", keep)
    return f"{seconds / count * 1000:.0f} ms" if count else "n/a"


def describe(run: dict[str, Any]) -> str:
    lb, la = run["load_before"], run["load_after"]
    lines = [
        f"== tuning {run['tuning']}: {run['ready']}/{run['count']} Deployments Ready in"
        f" {run['ready_s']:.1f} s ({run['pods_per_s']:.1f} pods/s; created in"
        f" {run['created_s']:.1f} s; cluster up {run['cluster_up_s']:.1f} s)",
        f"   load average before {lb[0]:.2f} {lb[1]:.2f} {lb[2]:.2f},"
        f" after {la[0]:.2f} {la[1]:.2f} {la[2]:.2f}",
    ]
    timeline = run["timeline"]
    origin = min(timeline["deployment created"] or [0.0])
    lines.append("   stage (s after the first Deployment)   half   all   objects")
    for stage, times in timeline.items():
        if times:
            half = statistics.median(times) - origin
            lines.append(f"   {stage:<38}{half:6.0f}{times[-1] - origin:6.0f}   {len(times)}")
    rejected = delta(run, "apiserver", "apiserver_flowcontrol_rejected_requests_total")
    queued = delta(run, "apiserver", "apiserver_flowcontrol_request_wait_duration_seconds_sum")
    requests = delta(run, "apiserver", "apiserver_request_total", not_long_running)
    p50, p99 = latency(run, not_long_running, 0.5), latency(run, not_long_running, 0.99)
    lines.append(
        f"   kube-apiserver: {requests:.0f} requests, latency p50 {p50} p99 {p99}"
        f" (mutating p99 {latency(run, mutating, 0.99)});"
        f" APF queued {queued:.1f} s in all, rejected {rejected:.0f}"
    )
    probes = run["probe_s"]
    if probes:
        lines.append(
            f"   a GET every {PROBE_S} s during the load: {len(probes)} requests, p50"
            f" {statistics.median(probes) * 1000:.0f} ms, p99"
            f" {probes[min(len(probes) - 1, int(0.99 * len(probes)))] * 1000:.0f} ms,"
            f" max {probes[-1] * 1000:.0f} ms"
        )
    for part, label in (("kcm", "kube-controller-manager"), ("scheduler", "kube-scheduler")):
        waited = delta(run, part, "rest_client_rate_limiter_duration_seconds_sum")
        sent = delta(run, part, "rest_client_requests_total")
        lines.append(
            f"   {label}: {sent:.0f} requests, {waited:.1f} s waited in client rate limiters"
        )
    lines.append(
        f"   kcm workqueues, mean queue time: deployment {queue_mean(run, 'deployment')},"
        f" replicaset {queue_mean(run, 'replicaset')}"
    )
    cpu = {k: run["after"]["cpu"].get(k, 0.0) - v for k, v in run["before"]["cpu"].items()}
    lines.append(
        "   CPU s: "
        + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
        + f" (control plane {sum(cpu.values()):.1f})"
    )
    lines.append(
        "   peak RSS MiB: " + ", ".join(f"{k} {v:.0f}" for k, v in run["after"]["rss"].items())
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--reps", type=int, default=1)
    parser.add_argument("--tunings", nargs="+", default=["kwokctl", "throughput"],
                        choices=sorted(TUNINGS))  # fmt: skip
    parser.add_argument("--name", default="bench-tp", help="cluster name prefix")
    parser.add_argument("--arg", action="append", default=[],
                        help="COMPONENT:FLAG=VALUE for the 'throughput' runs")  # fmt: skip
    parser.add_argument("--json", type=Path, help="write the figures here")
    args = parser.parse_args()
    overrides = parse_control_plane_args(args.arg, source="--arg")
    print(f"cpus {os.cpu_count()}, {args.count} one-replica Deployments, {WORKERS} client threads")
    figures = []
    for _rep in range(args.reps):
        for tuning in args.tunings:
            run = one_run(f"{args.name}-{tuning}", tuning, args.count,
                          overrides if tuning == "throughput" else [])  # fmt: skip
            print(describe(run), flush=True)
            figures.append({k: v for k, v in run.items() if k not in ("before", "after")})
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
