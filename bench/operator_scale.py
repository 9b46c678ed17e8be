"""Benchmark: N WebApps (default 1,000) through the operator against the floor, in one run.

The floor: the very Deployments and Services the operator builds for those WebApps
(`webapp_operator.builders`, without the owner reference), server-side applied by this
script from a thread pool - what the control plane alone needs. Then the same N WebApps are
applied from the same pool with the operator running. Both in fresh namespaces of the same
cluster, one after the other. Each arm's progress is read from a watch of its namespace,
started before its first write (`Progress`), so that measuring costs every arm the same.
Printed: time until every Deployment is ready (each pod Running) for both, the ratio (goal
<= 1.2, issue 38), the operator's own part (every child exists), time until every WebApp
reports phase Running for its generation, the operator's peak RSS (VmRSS sampled every
second; goal <= 200 MiB) and CPU, its reconciles and failed reconciles (goal 0) from its
health port, and the time until all N WebApps are gone after one delete (each finalizer
runs). Never passes or fails.

The figures that do not depend on the machine's load are counted too: the operator's API
requests per WebApp, by verb and resource, while the WebApps converge and while they are
deleted (the API server's audit log of the operator's ServiceAccount, when this script
creates the embedded cluster: `bench/operator_requests.py`'s policy), and its CPU seconds per
reconcile. So is the API server's time on every Service creation, the floor's and the
operator's (any user: the same policy plus every write of a Service), p50/p90 and per second:
kube-apiserver allocates one ClusterIP at a time (a lock held across its IPAddress create),
so Services are created at a rate the rest of the API server's load sets. `--profile FILE`
samples the operator's stacks and CPU per thread into FILE (`bench/sampling/sitecustomize.py`);
`--no-floor` measures the operator alone.

`--ideal` adds a third arm between the floor and the operator, in a fresh namespace of the same
cluster: the ideal operator, an operator that costs nothing of its own (no CPU, no watches, no
queues). This script sends the writes the operator cannot avoid for each WebApp, back to back,
from a pool of threads: the custom object's create (a copy of the WebApp CRD under
`ideal.bench.example.com`: the same schema, no webhook, no operator watching it), its finalizer
(a merge patch, as kopf adds it), the Deployment and the Service (the floor's objects, owned by
the custom object as the operator's children are), one status patch (`compute_status`'s shape)
and one Event: 6 requests per WebApp, counted and timed here. Deleting is one delete of the
collection and one finalizer removal per object. It answers: could any operator get within 1.2x
of the floor on this control plane? If the ideal operator cannot, no operator with as many
requests in flight can; if it can, the gap between it and the operator is the operator's own.
Each thread sends one WebApp's requests at a time, so the arm is bound by their latency (a
Service's creation waits for its ClusterIP): by default it has the floor's WORKERS threads, the
operator has 16 reconcile threads; `--ideal-workers N` sets them.

    .venv/bin/python bench/operator_scale.py [--count 1000] [--cluster NAME | --kubeconfig FILE]
        [--json FILE] [--profile FILE] [--no-floor] [--ideal [--ideal-workers N]]

The embedded cluster holds thousands of pods and Services (`compare cluster up`: a /16
Service range, 4000 pods per kwok node).
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from kubernetes import client
from operator_common import (
    RssSampler,
    add_cluster_args,
    add_output_args,
    apply_webapps,
    bench_target,
    counted,
    counters,
    delete_namespace,
    floor_objects,
    make_webapp,
    new_namespace,
    operator_info,
    operator_pid,
    operator_running,
    report,
    rss_mib,
    wait_for,
    webapp_running,
    write_json,
)
from operator_requests import (
    AUDIT_POLICY,
    AUDIT_VERBS,
    audit_all,
    audit_events,
    audit_size,
    resource_of,
)

from compare.approaches.operator.process import health
from compare.cluster import EmbeddedCluster
from compare.deploy.processes import LocalProcess
from compare.judge.reading import Reading
from compare.judge.rest import request, resource_path
from compare.judge.watch import NamespaceWatch
from compare.kube import served
from compare.webapp import API_GROUP, API_VERSION, PLURAL, WebApp, to_cr
from webapp_operator.builders import owner_reference
from webapp_operator.crd import build_crd
from webapp_operator.status import compute_status

# The operator's requests (`operator_requests`) and every user's writes of Services.
SCALE_AUDIT_POLICY = AUDIT_POLICY.replace(
    "- level: None",
    "- level: Metadata\n"
    '  verbs: ["create", "patch"]\n'
    '  resources: [{group: "", resources: ["services"]}]\n'
    "- level: None",
)
WORKERS = 8
POLL_S = 0.5
TIMEOUT_S = 1800
FIELD_MANAGER = "bench-floor"
# The ideal operator's custom objects: the WebApp's CRD under a group of this bench's own.
IDEAL_GROUP = "ideal.bench.example.com"
IDEAL_VERSION = f"{IDEAL_GROUP}/{API_VERSION}"
IDEAL_FINALIZER = f"{IDEAL_GROUP}/cleanup"
IDEAL_NAME = "bench-ideal"  # its Events' reporting component, its CRD's field manager
MERGE_PATCH = "application/merge-patch+json"
REQUEST_TIMEOUT_S = 60.0  # one write on a busy API server
CHILD_KINDS = ("Deployment", "Service")
WEBAPP_KIND = f"WebApp.{API_VERSION}.{API_GROUP}"  # a qualified kind name (`compare.judge`)
PROGRESS_POLL_S = 0.2  # the watch's cache, in this process: a few milliseconds a check
WATCH_FAILING_S = 60.0
T = TypeVar("T")


def webapps(count: int) -> list[WebApp]:
    return [
        make_webapp(
            f"app-{i:04d}",
            replicas=1,
            image=f"web:v{i % 7}",
            env=[{"name": "INDEX", "value": str(i)}],
        )
        for i in range(count)
    ]


def apply_floor(api: client.ApiClient, objects: list[dict[str, Any]]) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    for obj in objects:
        meta = obj["metadata"]
        patch = (
            apps.patch_namespaced_deployment
            if obj["kind"] == "Deployment"
            else core.patch_namespaced_service
        )
        patch(
            meta["name"],
            meta["namespace"],
            obj,
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type="application/apply-patch+yaml",
            _preload_content=False,
        )


def deployment_ready(dep: Mapping[str, Any]) -> bool:
    """Whether a Deployment's rollout is complete with every replica ready."""
    status, want = dep.get("status") or {}, (dep.get("spec") or {}).get("replicas", 1)
    return bool(
        status.get("observedGeneration") == (dep.get("metadata") or {}).get("generation")
        and status.get("readyReplicas", 0) == want
        and status.get("updatedReplicas", 0) == want
        and status.get("replicas", 0) == want
    )


def children_exist(reading: Reading, count: int) -> bool:
    """`count` Deployments and `count` Services in a reading of one namespace."""
    return len(reading.all("Deployment")) == count and len(reading.all("Service")) == count


def all_ready(reading: Reading, count: int) -> bool:
    """`count` Deployments ready and `count` Services in a reading of one namespace."""
    return children_exist(reading, count) and all(
        deployment_ready(d) for d in reading.all("Deployment")
    )


class Progress:
    """One namespace's objects of `kinds`, as a watch keeps them (`NamespaceWatch`): each arm's
    progress is read from this cache in this process, started before the arm's first write.

    Listing the namespace's thousand objects from the API server every poll (as this script did
    until 2026-12-07) charged that cost (this process's CPU and the API server's, on the same
    two cores) to the arm polled while it worked: the operator's (polled from its first
    WebApp on, up to four lists a poll), not the floor's (its writes return only once sent,
    then one list ends the wait). A watch costs every arm the same: an event per change of a
    watched object."""

    def __init__(self, api: client.ApiClient, namespace: str, kinds: Iterable[str]) -> None:
        self.namespace = namespace
        self.watch = NamespaceWatch(api, namespace, kinds=tuple(kinds))

    def __enter__(self) -> Progress:
        self.watch.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.watch.stop()

    def wait(self, done: Callable[[Reading], bool], what: str) -> None:
        """Until `done` holds for the cache (checked every PROGRESS_POLL_S); SystemExit after
        TIMEOUT_S, or when the watch has not reached the API server for WATCH_FAILING_S."""

        def check() -> bool:
            failing = self.watch.failing_since
            if failing is not None and time.time() - failing > WATCH_FAILING_S:
                errors = self.watch.errors[-1:] or ["?"]
                raise SystemExit(f"the watch of {self.namespace} failed: {errors[0]}")
            return done(self.watch.reading())

        wait_for(check, timeout=TIMEOUT_S, what=what, poll=PROGRESS_POLL_S)


def count_webapps(api: client.ApiClient, namespace: str, group: str = API_GROUP) -> int:
    return len(
        client.CustomObjectsApi(api).list_namespaced_custom_object(
            group, API_VERSION, namespace, PLURAL
        )["items"]
    )


def in_pool(work: Callable[[T], object], items: Iterable[T], workers: int = WORKERS) -> None:
    """`work` on every item from a pool of `workers` threads (the floor's, the ideal's)."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(work, items))


def converge(
    api: client.ApiClient, namespace: str, count: int, audit: Path | None, send: Callable[[], None]
) -> dict[str, Any]:
    """`send()` the writes, then wait until `count` Deployments are ready and `count` Services
    exist in `namespace`: seconds until the writes were sent and until all ready, from the
    first write, and the Service creations meanwhile (`service_writes`)."""
    offset = audit_size(audit)
    with Progress(api, namespace, CHILD_KINDS) as progress:
        start = time.perf_counter()
        send()
        applied = time.perf_counter() - start
        progress.wait(lambda r: all_ready(r, count), f"the Deployments of {namespace} ready")
        ready = time.perf_counter() - start
    return {
        "services": service_writes(audit, offset, audit_size(audit)),
        "applied_s": applied,
        "all_ready_s": ready,
    }


def run_floor(api: client.ApiClient, apps: list[WebApp], audit: Path | None) -> dict[str, Any]:
    namespace = new_namespace(api, "bench-floor")
    objects = [floor_objects(w, namespace) for w in apps]
    figures = converge(
        api,
        namespace,
        len(apps),
        audit,
        lambda: in_pool(lambda objs: apply_floor(api, objs), objects),
    )
    start = time.perf_counter()
    delete_namespace(api, namespace, timeout=TIMEOUT_S)
    return {**figures, "namespace_deleted_s": time.perf_counter() - start}


def ideal_crd() -> dict[str, Any]:
    """The WebApp CRD under IDEAL_GROUP: the same schema, CEL rules and subresources. No
    webhook is registered for this group and no operator watches it."""
    crd = build_crd()
    crd["metadata"]["name"] = f"{PLURAL}.{IDEAL_GROUP}"
    crd["spec"]["group"] = IDEAL_GROUP
    crd["spec"]["names"].pop("shortNames", None)  # kubectl's short names stay the WebApp's
    return crd


def ideal_event(obj: Mapping[str, Any], reason: str, message: str, now: datetime) -> dict[str, Any]:
    """A core/v1 Event about the custom object `obj`, as kopf posts the operator's."""
    meta = obj["metadata"]
    at = now.isoformat()
    return {
        "metadata": {"namespace": meta["namespace"], "generateName": f"{IDEAL_NAME}-"},
        "type": "Normal",
        "reason": reason,
        "message": message,
        "action": "Action?",
        "reportingComponent": IDEAL_NAME,
        "reportingInstance": IDEAL_NAME,
        "source": {"component": IDEAL_NAME},
        "involvedObject": {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta["uid"],
        },
        "firstTimestamp": at,
        "lastTimestamp": at,
        "eventTime": at,
    }


def path_resource(path: str) -> str:
    """The resource a namespaced request path names, with its subresource: `webapps`,
    `webapps/status` (as the audit log's `resource_of` names them)."""
    parts = path.split("/namespaces/", 1)[1].split("/")  # NS, PLURAL[, NAME[, SUB]]
    return "/".join(parts[1:2] + parts[3:4])


class Sender:
    """The ideal operator's requests: sent as the operator sends its own (`compare.judge.rest`,
    plain JSON, the client's connection pool), timed by "VERB resource"."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.took: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def __call__(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str | None = None,
        timeout: float = REQUEST_TIMEOUT_S,
    ) -> dict[str, Any]:
        start = time.perf_counter()
        answer = request(
            self.api, method, path, body=body, content_type=content_type, timeout=timeout
        )
        took = time.perf_counter() - start
        with self._lock:
            self.took.setdefault(f"{method} {path_resource(path)}", []).append(took)
        return answer

    def take(self, phase: str) -> dict[str, dict[str, float]]:
        """The requests so far, as `requests_PHASE` (how many) and `request_p50_s_PHASE` (the
        client's time on each, median) by "VERB resource"; counting starts again."""
        with self._lock:
            took, self.took = self.took, {}
        return {
            f"requests_{phase}": {what: len(each) for what, each in took.items()},
            f"request_p50_s_{phase}": {what: statistics.median(e) for what, e in took.items()},
        }


def ideal_reconcile(send: Sender, webapp: WebApp, namespace: str) -> None:
    """One new WebApp's writes that no operator can avoid, back to back."""
    obj = send("POST", resource_path(IDEAL_VERSION, PLURAL, namespace), ideal_object(webapp))
    path = resource_path(IDEAL_VERSION, PLURAL, namespace, webapp.name)
    finalizer = {"metadata": {"finalizers": [IDEAL_FINALIZER]}}
    send("PATCH", path, finalizer, content_type=MERGE_PATCH)
    owner = {**owner_reference(obj), "apiVersion": IDEAL_VERSION}
    deployment, service = floor_objects(webapp, namespace, owner)
    live = send("POST", resource_path("apps/v1", "deployments", namespace), deployment)
    send("POST", resource_path("v1", "services", namespace), service)
    now = datetime.now(UTC)
    status = {"status": compute_status(obj, live, now=now)}
    send("PATCH", f"{path}/status", status, content_type=MERGE_PATCH)
    created = "; ".join(f"created {kind} {namespace}/{webapp.name}" for kind in CHILD_KINDS)
    send(
        "POST", resource_path("v1", "events", namespace), ideal_event(obj, "Created", created, now)
    )


def ideal_object(webapp: WebApp) -> dict[str, Any]:
    return {**to_cr(webapp), "apiVersion": IDEAL_VERSION}


def run_ideal(
    api: client.ApiClient, apps: list[WebApp], audit: Path | None, workers: int
) -> dict[str, Any]:
    """The ideal operator's arm: its CRD installed, its writes for every WebApp, its deletion
    (one delete of the collection, every finalizer removed); the CRD removed."""
    crd = ideal_crd()
    served.apply_all(api, [crd], field_manager=IDEAL_NAME)
    served.wait_established(api, [crd["metadata"]["name"]], timeout=60)
    namespace = new_namespace(api, "bench-ideal")
    # The API server makes a CRD's storage on its first request: here, before the clock (the
    # operator's watches make the WebApp's before its first WebApp).
    count_webapps(api, namespace, IDEAL_GROUP)
    send = Sender(api)
    figures = converge(
        api,
        namespace,
        len(apps),
        audit,
        lambda: in_pool(lambda w: ideal_reconcile(send, w, namespace), apps, workers),
    )
    converged = send.take("converge")
    start = time.perf_counter()
    send("DELETE", resource_path(IDEAL_VERSION, PLURAL, namespace), timeout=TIMEOUT_S)
    in_pool(
        lambda w: send(
            "PATCH",
            resource_path(IDEAL_VERSION, PLURAL, namespace, w.name),
            {"metadata": {"finalizers": None}},
            content_type=MERGE_PATCH,
        ),
        apps,
        workers,
    )
    wait_for(
        lambda: count_webapps(api, namespace, IDEAL_GROUP) == 0,
        timeout=TIMEOUT_S,
        what="every ideal custom object gone",
        poll=POLL_S,
    )
    deleted = time.perf_counter() - start
    deleting = send.take("delete")
    delete_namespace(api, namespace, timeout=TIMEOUT_S)
    client.ApiextensionsV1Api(api).delete_custom_resource_definition(crd["metadata"]["name"])
    return {
        **figures,
        "deleted_s": deleted,
        **converged,
        **deleting,
        "requests_per_webapp": sum(converged["requests_converge"].values()) / len(apps),
    }


def requests_by_kind(audit: Path | None, start: int, end: int) -> dict[str, int]:
    """The operator's requests between two audit log offsets: "VERB resource" -> count."""
    if audit is None:
        return {}
    found = Counter(
        f"{AUDIT_VERBS.get(e.get('verb', ''), '?')} {resource_of(e)}"
        for e in audit_events(audit, start, end)
    )
    return dict(found.most_common())


def service_writes(audit: Path | None, start: int, end: int) -> dict[str, float]:
    """Service creations by anyone between two audit log offsets: how many, the API server's
    time on each (received to answered; p50, p90, seconds) and how many a second (first
    received to last answered)."""
    if audit is None:
        return {}
    spans = []
    for event in audit_all(audit, start, end):
        ref = event.get("objectRef") or {}
        if ref.get("resource") != "services" or ref.get("subresource"):
            continue
        if event.get("verb") not in ("create", "patch") or event.get("responseStatus", {}).get(
            "code"
        ) not in (200, 201):
            continue
        received = datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()
        answered = datetime.fromisoformat(event["stageTimestamp"]).timestamp()
        spans.append((received, answered))
    if not spans:
        return {}
    took = sorted(b - a for a, b in spans)
    window = max(b for _, b in spans) - min(a for a, _ in spans)
    return {
        "count": len(spans),
        "p50_s": took[len(took) // 2],
        "p90_s": took[int(len(took) * 0.9)],
        "per_s": len(spans) / window if window > 0 else 0.0,
    }


def run_operator(
    api: client.ApiClient, apps: list[WebApp], info: LocalProcess, audit: Path | None
) -> dict[str, Any]:
    namespace = new_namespace(api, "bench-scale")
    before = counters(health(info))
    rss_before = rss_mib(info.pid) or 0.0
    cpu_before = cpu_seconds(info.pid)
    marks: dict[str, float] = {}
    offsets = [audit_size(audit)]
    with (
        RssSampler(info.pid, 1.0) as rss,
        Progress(api, namespace, (*CHILD_KINDS, WEBAPP_KIND)) as progress,
    ):
        start = time.perf_counter()
        retries = apply_webapps(api, namespace, apps, WORKERS)
        marks["applied_s"] = time.perf_counter() - start
        n = len(apps)

        def converged(reading: Reading) -> bool:
            now = time.perf_counter() - start
            if "children_s" not in marks and children_exist(reading, n):
                marks["children_s"] = now
            if "all_ready_s" not in marks and all_ready(reading, n):
                marks["all_ready_s"] = now
            webapps = reading.all(WEBAPP_KIND)
            if (
                "all_running_s" not in marks
                and len(webapps) == n
                and all(webapp_running(w) for w in webapps)
            ):
                marks["all_running_s"] = now
            return len(marks) == 4

        progress.wait(converged, "every WebApp Running")
        cpu = cpu_seconds(info.pid) - cpu_before
        profile_dump(info.pid)
        after = counters(health(info))
        offsets.append(audit_size(audit))
        cpu_before_delete = cpu_seconds(info.pid)
        start = time.perf_counter()
        # Deleting a thousand objects takes the API server longer than a request's default
        # deadline on a busy machine.
        client.CustomObjectsApi(api).delete_collection_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, _request_timeout=TIMEOUT_S
        )
        progress.wait(lambda r: not r.all(WEBAPP_KIND), "every WebApp gone")
        marks["deleted_s"] = time.perf_counter() - start
        cpu_delete = cpu_seconds(info.pid) - cpu_before_delete
        profile_dump(info.pid)
        final = counters(health(info))
        time.sleep(2)  # the last requests' audit events are written when they complete
        offsets.append(audit_size(audit))
    delete_namespace(api, namespace, timeout=TIMEOUT_S)
    return {
        **marks,
        "cpu_s": cpu,
        "cpu_delete_s": cpu_delete,
        "requests_converge": requests_by_kind(audit, offsets[0], offsets[1]),
        "services": service_writes(audit, offsets[0], offsets[1]),
        "requests_delete": requests_by_kind(audit, offsets[1], offsets[2]),
        "rss_before_mib": rss_before,
        "rss_peak_mib": rss.peak,
        "rss_after_mib": rss.samples[-1][1] if rss.samples else 0.0,
        # (seconds from the first apply, MiB) every second: where the peak falls.
        "rss_samples_mib": [(round(t, 1), round(v, 1)) for t, v in rss.samples],
        **counted(before, after),
        "failures_incl_deletion": final["failures"] - before["failures"],
        "apply_retries": retries,
    }


def profile_dump(pid: int) -> None:
    """With --profile: the event loop's exact profile so far, into FILE.N.pstats."""
    if os.environ.get("OPERATOR_SAMPLE_FILE"):
        os.kill(operator_pid(pid), signal.SIGUSR2)


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{operator_pid(pid)}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--profile", type=Path, help="sample the operator's stacks into FILE")
    parser.add_argument("--no-floor", action="store_true", help="the operator only")
    parser.add_argument(
        "--ideal",
        action="store_true",
        help="also the ideal operator: the operator's unavoidable writes, sent by this script",
    )
    parser.add_argument(
        "--ideal-workers",
        type=int,
        default=WORKERS,
        help=f"the ideal operator's threads, each one WebApp at a time (default {WORKERS})",
    )
    add_cluster_args(parser)
    add_output_args(parser)
    args = parser.parse_args()
    if args.ideal_workers < 1:
        raise SystemExit(f"--ideal-workers {args.ideal_workers}: must be at least 1")
    apps = webapps(args.count)
    if args.profile is not None:
        # The operator's process inherits this environment (`bench/sampling`).
        sampling = str(Path(__file__).resolve().parent / "sampling")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            p for p in (sampling, os.environ.get("PYTHONPATH")) if p
        )
        os.environ["OPERATOR_SAMPLE_FILE"] = str(args.profile.resolve())
    audit = None if args.kubeconfig is not None else EmbeddedCluster(args.cluster).audit_log
    with bench_target(args, audit_policy=SCALE_AUDIT_POLICY) as target:
        if audit is not None and not audit.exists():
            print(f"no audit log at {audit} (cluster made without the policy): no request counts")
            audit = None
        api = target.api_client()
        print(
            f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, "
            f"{args.count} WebApps x 1 replica, {WORKERS} client threads"
        )
        floor: dict[str, Any] = {"applied_s": 0.0, "all_ready_s": 0.0, "namespace_deleted_s": 0.0}
        if not args.no_floor:
            floor = run_floor(api, apps, audit)
            print(f"floor: all {args.count} Deployments ready in {floor['all_ready_s']:.1f} s")
        ideal = run_ideal(api, apps, audit, args.ideal_workers) if args.ideal else None
        if ideal is not None:
            print(f"ideal operator: all Deployments ready in {ideal['all_ready_s']:.1f} s")
        with operator_running(target) as handle:
            ours = run_operator(api, apps, operator_info(handle), audit)
    ratio = ratio_to(ours, floor)
    # The ideal operator's column, between the floor's and the operator's, with --ideal.
    arms = [floor, *([ideal] if ideal is not None else []), ours]

    def row(label: str, key: str, note: str = "") -> list[Any]:
        return [label, *(arm.get(key, "") for arm in arms), note]

    ideal_note = f"; ideal {ratio_to(ideal, floor):.2f}" if ideal is not None else ""
    rows = [
        row("applied (client side)", "applied_s"),
        row("every Deployment + Service exists", "children_s", "the operator's part"),
        row("every Deployment ready (pods Running)", "all_ready_s",
            f"ratio {ratio:.2f} (goal <= 1.2){ideal_note}"),
        row("every WebApp phase Running", "all_running_s"),
        row("all WebApps gone after one delete", "deleted_s", "finalizers ran"),
    ]  # fmt: skip
    headers = ["", "floor (raw apply)", *(["ideal operator"] if ideal else []), "operator", "note"]
    report(f"{args.count} WebApps: seconds from the first apply", rows, headers)
    report(
        "operator process",
        [
            ["RSS before / peak / after (MiB)",
             f"{ours['rss_before_mib']:.0f} / {ours['rss_peak_mib']:.0f} / "
             f"{ours['rss_after_mib']:.0f}", "peak goal <= 200"],
            ["CPU during convergence (s)", f"{ours['cpu_s']:.1f}", ""],
            ["CPU per reconcile (ms)",
             f"{1000 * ours['cpu_s'] / max(1, ours['reconciles']):.1f}", ""],
            ["CPU during the deletion (s)", f"{ours['cpu_delete_s']:.1f}", ""],
            ["WebApp applies retried (webhook call timed out)", ours["apply_retries"], ""],
            ["reconciles / children written", f"{ours['reconciles']} / {ours['changes']}", ""],
            ["failed reconciles (convergence / incl. deletion)",
             f"{ours['failures']} / {ours['failures_incl_deletion']}", "goal 0"],
        ],
        ["", "value", "goal"],
    )  # fmt: skip
    services = [
        (who, run.get("services") or {})
        for who, run in (("floor", floor), ("ideal operator", ideal or {}), ("operator", ours))
        if run
    ]
    if any(found for _, found in services):
        report(
            "Service creations (audit, any user): the API server's time on each, and the rate",
            [[who, found.get("count", 0), f"{found.get('p50_s', 0):.3f}",
              f"{found.get('p90_s', 0):.3f}", f"{found.get('per_s', 0):.1f}"]
             for who, found in services],
            ["", "count", "p50 (s)", "p90 (s)", "per second"],
        )  # fmt: skip
    for who, run, how in (
        ("the ideal operator's", ideal or {}, "sent"),
        ("the operator's", ours, "audit"),
    ):
        for phase in ("converge", "delete"):
            found = run.get(f"requests_{phase}")
            took = run.get(f"request_p50_s_{phase}") or {}
            if found:
                report(
                    f"{who} API requests per WebApp while they {phase} ({how})",
                    [[what, n / args.count, *([1000 * took[what]] if took else [])]
                     for what, n in found.items()]
                    + [["total", sum(found.values()) / args.count]],
                    ["verb resource", "per WebApp", *(["p50 (ms, client)"] if took else [])],
                )  # fmt: skip
    figures = {"count": args.count, "floor": floor, "operator": ours, "ratio_ready": ratio}
    if ideal is not None:
        figures.update(ideal=ideal, ratio_ready_ideal=ratio_to(ideal, floor))
    write_json(args.json, figures)


def ratio_to(arm: dict[str, Any], floor: dict[str, Any]) -> float:
    """The arm's time until every Deployment is ready over the floor's; 0 without a floor."""
    return arm["all_ready_s"] / floor["all_ready_s"] if floor["all_ready_s"] else 0.0


if __name__ == "__main__":
    main()
