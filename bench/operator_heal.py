"""Benchmark: how fast the operator heals drift, next to the Go deployment controller.

Per trial a fault is injected into a running WebApp's Deployment (by a separate field
manager) and a watch started before the injection timestamps the event in which the owned
field is back. Three references, in the same run and cluster: kube-controller-manager's
deployment controller (Go) restoring a ReplicaSet's replicas after the same kind of drift,
once for a ReplicaSet of the operator's own pod template (the same object size, so the same
server-side cost of a write) and once for a bare one-container template (the reference of
earlier figures); and the Python floor: a bare healer in this process (one raw watch, no
kopf, no models) that sends the operator's own restoring patch (`compare.judge.heal`, by
path) the moment it sees the operator's Deployment (a copy, not owned) drift - what any
Python controller on this client pays, so the operator's own overhead is the difference to
it. Trials alternate between
the kinds, each from a settled state. Prints n, p50, p95, min, max per fault; never passes
or fails.

Then every heal by stage, on one timeline per trial, from the moment the API server had
committed the fault. The operator's stages come from its own log line of each correction
(`time.monotonic()`, one clock for every process of the machine): its watch event handled
(the daemon kicked), the reconcile's turn, the thread's start, its inputs decoded, the drift
found, the patch built, the request handed to the connection pool, the answer read. When this
script creates the embedded cluster (with `AUDIT_POLICY`: the operator's requests and every
write of a Deployment or ReplicaSet), the API server's audit log adds when it committed the
fault, when it received the healing request (the operator's, the Go controller's update, the
floor's patch) and when it had answered it (`requestReceivedTimestamp`, `stageTimestamp`);
this script's own watch adds when the healed object reached a watcher. So each reference is
cut into: the fault's event reaching the healer and its decision (fault committed -> healing
request received by the API server), the API server's work on it, and the healed object's
event reaching a watcher; and the operator's first part further into its stages. Last, the
API server's work on the operator's restoring patch sent at once after a fault and 1 s later
(`--late-trials`), on a copy nothing heals: what the moment a heal arrives costs.

    .venv/bin/python bench/operator_heal.py [--trials 20] [--cluster NAME | --kubeconfig FILE]

Use a cluster of its own (`--cluster`, started and deleted here when not running): the audit
policy is set when a cluster is created.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client, watch
from kubernetes.watch.watch import iter_resp_lines
from operator_common import (
    add_cluster_args,
    bench_target,
    delete_namespace,
    floor_objects,
    make_webapp,
    operator_running,
    summary,
    wait_for,
)
from operator_requests import IDENTITY, audit_size

from compare.approaches import arms, builtin_target
from compare.approaches.operator import Operator
from compare.cluster import EmbeddedCluster
from compare.judge.heal import restoring_patch
from compare.judge.kinds import kind
from compare.judge.rest import request
from webapp_operator.handlers import STAGE_STAMPS
from webapp_operator.names import FIELD_MANAGER as OPERATOR_MANAGER

REPLICAS = 3
DEPLOYMENTS = "deployments"
FIELD_MANAGER = "bench-chaos"
HEALER_MANAGER = "bench-healer"
# The operator's requests, and every write of a Deployment or ReplicaSet (the faults, the
# heals: the operator's, the Go controller's, the floor's).
AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: ["{IDENTITY}"]
- level: Metadata
  verbs: [patch, update]
  resources: [{{group: apps, resources: [deployments, replicasets]}}]
- level: None
"""


Check = Callable[[Any, str], bool]  # (object, event type) -> bool


class Stopwatch:
    """A watch on one object, started before the fault: it waits for the event showing the
    fault, then records when the first later event shows the field healed."""

    def __init__(
        self,
        list_fn: Callable[..., Any],
        namespace: str,
        name: str,
        faulty: Check,
        healed: Check,
        resource_version: str,
    ) -> None:
        self._name = name
        self.fault_seen_at: float | None = None
        self.healed_at: float | None = None
        self._stream = watch.Watch()
        self._thread = threading.Thread(
            target=self._run,
            args=(list_fn, namespace, name, faulty, healed, resource_version),
            daemon=True,
        )
        self._thread.start()
        time.sleep(0.2)  # let the stream connect before the fault (a benchmark, not a test)

    def _run(
        self,
        list_fn: Callable[..., Any],
        namespace: str,
        name: str,
        faulty: Check,
        healed: Check,
        resource_version: str,
    ) -> None:
        seen_fault = False
        for event in self._stream.stream(
            list_fn,
            namespace,
            field_selector=f"metadata.name={name}",
            resource_version=resource_version,
            timeout_seconds=60,
        ):
            obj, kind = event["object"], event["type"]
            if not seen_fault:
                seen_fault = faulty(obj, kind)
                if seen_fault:
                    self.fault_seen_at = time.monotonic()
            elif healed(obj, kind):
                self.healed_at = time.monotonic()
                self._stream.stop()
                return

    def result(self, injected: float, timeout: float = 60) -> Trial:
        self._thread.join(timeout)
        if self.healed_at is None:
            raise SystemExit("a fault was not healed within 60 s")
        return Trial(self._name, injected, self.fault_seen_at, self.healed_at)


@dataclass(frozen=True)
class Trial:
    """One fault and its heal as this script saw them (`time.monotonic()`): the fault's
    request sent, the fault in the watch, the healed object in the watch."""

    name: str  # the object healed
    injected: float
    fault_seen: float | None
    healed: float

    @property
    def latency(self) -> float:
        return self.healed - self.injected


def settled(apps: client.AppsV1Api, namespace: str, name: str) -> bool:
    try:
        dep = apps.read_namespaced_deployment(name, namespace)
    except client.ApiException:
        return False
    status = dep.status
    return bool(
        dep.spec.replicas == REPLICAS
        and status.observed_generation == dep.metadata.generation
        and status.ready_replicas == REPLICAS
        and status.updated_replicas == REPLICAS
        and (status.replicas or 0) == REPLICAS
    )


def operator_trial(api: client.ApiClient, namespace: str, fault: str) -> Trial:
    apps = client.AppsV1Api(api)
    current = apps.read_namespaced_deployment("heal", namespace)
    rv = current.metadata.resource_version
    container = "/spec/template/spec/containers/0"

    def image(d: Any) -> str:
        return str(d.spec.template.spec.containers[0].image)

    def env(d: Any) -> Any:
        return d.spec.template.spec.containers[0].env

    # fault -> (patch, the fault is visible, the field is healed)
    patches: dict[str, tuple[Any, Check, Check]] = {
        "replicas": (
            {"spec": {"replicas": 1}},
            lambda d, t: d.spec.replicas == 1,
            lambda d, t: d.spec.replicas == REPLICAS,
        ),
        "image": (
            [{"op": "replace", "path": f"{container}/image", "value": "evil:v9"}],
            lambda d, t: image(d) == "evil:v9",
            lambda d, t: image(d) == "web:v1",
        ),
        "env-added": (
            [{"op": "add", "path": f"{container}/env", "value": [{"name": "X", "value": "1"}]}],
            lambda d, t: bool(env(d)),
            lambda d, t: not env(d),
        ),
    }
    if fault == "deployment-deleted":
        uid = current.metadata.uid
        timer = Stopwatch(
            apps.list_namespaced_deployment,
            namespace,
            "heal",
            lambda d, t: t == "DELETED",
            lambda d, t: t == "ADDED" and d.metadata.uid != uid,
            rv,
        )
        injected = time.monotonic()
        apps.delete_namespaced_deployment("heal", namespace)
        return timer.result(injected)
    body, faulty, healed = patches[fault]
    timer = Stopwatch(apps.list_namespaced_deployment, namespace, "heal", faulty, healed, rv)
    injected = time.monotonic()
    content = (
        "application/strategic-merge-patch+json"
        if isinstance(body, dict)
        else "application/json-patch+json"
    )
    apps.patch_namespaced_deployment(
        "heal", namespace, body, field_manager=FIELD_MANAGER, _content_type=content
    )
    return timer.result(injected)


def scale_down_trial(
    list_fn: Callable[..., Any],
    patch_fn: Callable[..., Any],
    namespace: str,
    name: str,
    resource_version: str,
) -> Trial:
    """Scale `name` to 1 (another field manager) and time until the watch shows REPLICAS."""
    timer = Stopwatch(
        list_fn,
        namespace,
        name,
        lambda o, t: o.spec.replicas == 1,
        lambda o, t: o.spec.replicas == REPLICAS,
        resource_version,
    )
    injected = time.monotonic()
    patch_fn(name, namespace, {"spec": {"replicas": 1}}, field_manager=FIELD_MANAGER)
    return timer.result(injected)


def go_trial(api: client.ApiClient, namespace: str, deployment: str) -> Trial:
    """The deployment controller restoring the replicas of `deployment`'s ReplicaSet."""
    apps = client.AppsV1Api(api)
    selector = apps.read_namespaced_deployment(deployment, namespace).spec.selector.match_labels
    (rs,) = [
        r
        for r in apps.list_namespaced_replica_set(
            namespace, label_selector=",".join(f"{k}={v}" for k, v in selector.items())
        ).items
        if (r.spec.replicas or 0) > 0
    ]
    return scale_down_trial(
        apps.list_namespaced_replica_set,
        apps.patch_namespaced_replica_set,
        namespace,
        rs.metadata.name,
        rs.metadata.resource_version,
    )


class BareHealer:
    """The Python floor: a raw watch of one Deployment that, on each event showing a drifted
    replicas count, sends the operator's restoring JSON patch at once (same client, same
    request by path), from its own thread and connection."""

    def __init__(self, api: client.ApiClient, namespace: str, desired: dict[str, Any]) -> None:
        self._api, self._namespace, self._desired = api, namespace, desired
        self._path = kind("Deployment").path(namespace, desired["metadata"]["name"])
        self._stop = threading.Event()
        self._response: Any = None
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        apps = client.AppsV1Api(self._api)
        while not self._stop.is_set():
            self._response = apps.list_namespaced_deployment(
                self._namespace,
                watch=True,
                field_selector=f"metadata.name={self._desired['metadata']['name']}",
                timeout_seconds=60,
                _preload_content=False,
            )
            try:
                for line in iter_resp_lines(self._response):
                    event = json.loads(line)
                    live = event["object"]
                    if event["type"] == "MODIFIED" and live["spec"]["replicas"] != REPLICAS:
                        request(
                            self._api,
                            "PATCH",
                            self._path,
                            query={"fieldManager": HEALER_MANAGER},
                            body=restoring_patch(self._desired, live),
                            content_type="application/json-patch+json",
                            timeout=10.0,
                        )
            except (urllib3.exceptions.HTTPError, OSError, ValueError, AttributeError):
                if self._stop.is_set():
                    return  # closed by stop()
                raise

    def stop(self) -> None:
        self._stop.set()
        if self._response is not None:
            self._response.close()


def operators_deployment(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    """The very Deployment the operator builds for the same WebApp, named `name`, without the
    owner reference (the operator leaves it alone)."""
    deployment, _ = floor_objects(make_webapp(name, replicas=REPLICAS, image="web:v1"), namespace)
    client.AppsV1Api(api).create_namespaced_deployment(namespace, deployment)
    return deployment


def floor_trial(api: client.ApiClient, namespace: str, name: str) -> Trial:
    """The bare healer restoring `name`'s replicas."""
    apps = client.AppsV1Api(api)
    current = apps.read_namespaced_deployment(name, namespace)
    return scale_down_trial(
        apps.list_namespaced_deployment,
        apps.patch_namespaced_deployment,
        namespace,
        name,
        current.metadata.resource_version,
    )


def minimal_deployment(api: client.ApiClient, namespace: str, name: str) -> None:
    """One container, nothing else: the smallest object the Go controller can heal."""
    labels = {"bench": name}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": REPLICAS,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "web:v1"}]},
            },
        },
    }
    client.AppsV1Api(api).create_namespaced_deployment(namespace, body)


# The references, each a Deployment healed by something else than the operator:
# name -> (what the line says, how a trial goes).
GO_MINIMAL, GO_SAME, FLOOR = "go-minimal", "go-same", "python-floor"
REFERENCES = {
    GO_SAME: "go deployment controller: ReplicaSet replicas (the operator's pod template)",
    GO_MINIMAL: "go deployment controller: ReplicaSet replicas (one bare container)",
    FLOOR: "python floor (bare watch + the operator's patch): replicas",
}


STAGES = re.compile(r"/heal DriftCorrected: .*; stages ((?:\w+=[0-9.]+ ?)+)")


def wall_to_monotonic() -> float:
    """What to subtract from a wall-clock time of this machine to get `time.monotonic()`."""
    return time.time() - time.monotonic()


class AuditReader:
    """The API server's audit events written since the last call."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._at = audit_size(path)

    def read(self) -> list[dict[str, Any]]:
        if self.path is None:
            return []
        end = audit_size(self.path)
        with self.path.open("rb") as handle:
            handle.seek(self._at)
            chunk = handle.read(end - self._at)
        self._at = end
        return [json.loads(line) for line in chunk.splitlines() if line.strip()]


def server_times(
    events: list[dict[str, Any]], offset: float, resource: str, name: str, manager: str | None
) -> list[tuple[float, float]]:
    """(received, answered) in `time.monotonic()` of each write of `resource`/`name` by
    `manager` (its fieldManager; None: an update without one, the Go controller's)."""
    found = []
    for event in events:
        ref = event.get("objectRef") or {}
        if ref.get("resource") != resource or ref.get("name") != name or ref.get("subresource"):
            continue
        if event.get("verb") not in ("patch", "update"):
            continue
        uri = str(event.get("requestURI", ""))
        if manager is not None and f"fieldManager={manager}" not in uri:
            continue
        if manager is None and (
            "fieldManager=" in uri
            or event.get("verb") != "update"
            or "kube-controller-manager" not in str(event.get("userAgent", ""))
        ):
            continue
        received = datetime.fromisoformat(event["requestReceivedTimestamp"]).timestamp()
        done = datetime.fromisoformat(event["stageTimestamp"]).timestamp()
        found.append((received - offset, done - offset))
    return found


# Per reference, the stages on its timeline (ms from the API server's answer to the fault's
# request: its audit `stageTimestamp`, just after the write).
HEALER_STAGES = (
    "fault written (API server's answer) -> seen by this script's watch",
    "fault written -> heal request received by the API server",
    "heal request: the API server's work (received -> answered)",
    "heal answered -> healed object seen by this script's watch",
    "fault written -> healed object seen (total)",
)
OPERATOR_STAGES = (
    "fault written -> operator's event handled (watch + kopf)",
    "event handled -> reconcile's turn (loop; hot path: desired read)",
    "reconcile's turn -> thread runs (executor hand-over)",
    "thread runs -> inputs decoded",
    "inputs decoded -> drift found (index, judge's diff)",
    "drift found -> patch built",
    "patch built -> handed to the pool (encode, headers)",
    "handed to the pool -> received by the API server",
    "answered by the API server -> answer read by the operator",
    "new connections opened for the heal request",
)


def healer_stages(
    trial: Trial, fault: tuple[float, float] | None, heal: tuple[float, float] | None
) -> list[float] | None:
    """The `HEALER_STAGES` of one trial, in ms; None without the audit events."""
    if fault is None or heal is None:
        return None
    committed = fault[1]
    seen = trial.fault_seen if trial.fault_seen is not None else float("nan")
    return [
        (seen - committed) * 1000,
        (heal[0] - committed) * 1000,
        (heal[1] - heal[0]) * 1000,
        (trial.healed - heal[1]) * 1000,
        (trial.healed - committed) * 1000,
    ]


# The stages the operator's hot path (`webapp_operator.fastheal`) goes without.
HOT_PATH_SKIPS = ("thread", "unpacked")


def operator_stages(
    stamps: dict[str, float], fault: tuple[float, float] | None, heal: tuple[float, float] | None
) -> list[float]:
    """The `OPERATOR_STAGES` of one correction, in ms (nan where a time is missing)."""
    nan = float("nan")
    committed = fault[1] if fault is not None else nan
    received, answered = heal if heal is not None else (nan, nan)
    chain = [committed]
    for name in STAGE_STAMPS[:7]:
        # A correction from the watch event on the loop (`fastheal`) has no thread and
        # decodes nothing: those stages take it no time.
        chain.append(stamps.get(name, chain[-1] if name in HOT_PATH_SKIPS else nan))
    values = [(later - earlier) * 1000 for earlier, later in itertools.pairwise(chain)]
    values.append((received - stamps.get("wire", nan)) * 1000)
    values.append((stamps.get("answered", nan) - answered) * 1000)
    values.append(stamps.get("new_connections", nan))
    return values


def log_stamps(log: Path, since: int) -> tuple[list[dict[str, float]], int]:
    """The stages of the operator's corrections of `heal` logged after byte `since`."""
    with log.open("rb") as handle:
        handle.seek(since)
        text = handle.read().decode("utf-8", "replace")
        end = handle.tell()
    found = []
    for match in STAGES.finditer(text):
        found.append({k: float(v) for k, v in (pair.split("=") for pair in match.group(1).split())})
    return found, end


def print_stages(title: str, names: tuple[str, ...], rows: list[list[float]]) -> None:
    print(title)
    for i, what in enumerate(names):
        values = [row[i] for row in rows if len(row) > i and row[i] == row[i]]  # not nan
        unit = "" if what.startswith("new connections") else "ms"
        print(f"  {what:76s} {summary(values, unit)}")


LATE = "late"  # a copy of the operator's Deployment that nothing heals


def late_trials(
    api: client.ApiClient, namespace: str, desired: dict[str, Any], trials: int, audit: Path
) -> dict[float, list[float]]:
    """The API server's work on the operator's restoring patch, sent at once after a fault
    and 1 s later (once the controllers' own reaction to it is over), on a Deployment that
    nothing else heals: how much of that work is the moment it arrives. Delay -> ms."""
    path = kind("Deployment").path(namespace, LATE)
    events = AuditReader(audit)
    found: dict[float, list[float]] = {0.0: [], 1.0: []}
    for _ in range(trials):
        for delay in found:
            events.read()
            live = request(
                api,
                "PATCH",
                path,
                query={"fieldManager": FIELD_MANAGER},
                body={"spec": {"replicas": 1}},
                content_type="application/merge-patch+json",
                timeout=10.0,
            )
            time.sleep(delay)
            request(
                api,
                "PATCH",
                path,
                query={"fieldManager": HEALER_MANAGER},
                body=restoring_patch(desired, live),
                content_type="application/json-patch+json",
                timeout=10.0,
            )
            time.sleep(1.5)  # the controllers settle, the audit log is written
            heals = server_times(
                events.read(), wall_to_monotonic(), DEPLOYMENTS, LATE, HEALER_MANAGER
            )
            found[delay] += [(done - received) * 1000 for received, done in heals[:1]]
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument(
        "--late-trials",
        type=int,
        default=10,
        help="the same patch sent at once and 1 s after a fault, this many times each (10)",
    )
    add_cluster_args(parser)
    args = parser.parse_args()
    audit = None if args.kubeconfig is not None else EmbeddedCluster(args.cluster).audit_log
    with (
        bench_target(args, audit_policy=AUDIT_POLICY) as target,
        operator_running(target) as handle,
    ):
        if audit is not None and not audit.exists():
            audit = None  # a cluster made without the policy: no server times
        api = target.api_client()
        namespace = f"bench-heal-{uuid.uuid4().hex[:5]}"
        webapp = make_webapp("heal", replicas=REPLICAS, image="web:v1")
        arms.deploy_arm(
            Operator(), target, builtin_target(webapp), namespace, timeout=120.0, rollback=False
        )
        minimal_deployment(api, namespace, GO_MINIMAL)
        operators_deployment(api, namespace, GO_SAME)
        bare = BareHealer(api, namespace, operators_deployment(api, namespace, FLOOR))
        late = operators_deployment(api, namespace, LATE)
        apps = client.AppsV1Api(api)
        for reference in REFERENCES:
            wait_for(partial(settled, apps, namespace, reference), timeout=60, what=reference)
        print(
            f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, operator pid {handle.pid}, "
            f"{args.trials} trials per fault, replicas {REPLICAS}"
        )
        faults = ["replicas", "image", "env-added", "deployment-deleted"]
        times: dict[str, list[float]] = {f"operator {f}": [] for f in faults}
        times.update({line: [] for line in REFERENCES.values()})
        by_stage: dict[str, list[list[float]]] = {"operator": [], **{r: [] for r in REFERENCES}}
        operator_rows: list[list[float]] = []
        hot = 0  # corrections made from the watch event on the loop (no "thread" stage)
        log = handle.state_dir / "operator.log"
        events = AuditReader(audit)
        try:
            for _ in range(args.trials):
                for fault in faults:
                    since = log.stat().st_size if log.exists() else 0
                    events.read()
                    trial = operator_trial(api, namespace, fault)
                    times[f"operator {fault}"].append(trial.latency)
                    wait_for(partial(settled, apps, namespace, "heal"), timeout=60, what="settle")
                    if fault == "deployment-deleted":
                        continue  # a create, not a patch: no stages
                    found, _ = log_stamps(log, since)
                    written = events.read()
                    offset = wall_to_monotonic()
                    faults_sent = server_times(
                        written, offset, "deployments", "heal", FIELD_MANAGER
                    )
                    heals = server_times(written, offset, "deployments", "heal", OPERATOR_MANAGER)
                    if len(found) != 1:
                        continue  # a heal that took two corrections: not one request's stages
                    first = faults_sent[0] if faults_sent else None
                    heal = heals[0] if len(heals) == 1 else None
                    operator_rows.append(operator_stages(found[0], first, heal))
                    hot += "thread" not in found[0]
                    row = healer_stages(trial, first, heal)
                    if row is not None:
                        by_stage["operator"].append(row)
                for reference, line in REFERENCES.items():
                    events.read()
                    run = floor_trial if reference == FLOOR else go_trial
                    trial = run(api, namespace, reference)
                    times[line].append(trial.latency)
                    wait_for(
                        partial(settled, apps, namespace, reference), timeout=60, what="settle"
                    )
                    written, offset = events.read(), wall_to_monotonic()
                    resource = "deployments" if reference == FLOOR else "replicasets"
                    healer = HEALER_MANAGER if reference == FLOOR else None
                    faults_sent = server_times(written, offset, resource, trial.name, FIELD_MANAGER)
                    heals = server_times(written, offset, resource, trial.name, healer)
                    row = healer_stages(
                        trial, faults_sent[0] if faults_sent else None, heals[0] if heals else None
                    )
                    if row is not None:
                        by_stage[reference].append(row)
            lates = late_trials(api, namespace, late, args.late_trials, audit) if audit else {}
        finally:
            bare.stop()
            delete_namespace(api, namespace)
        print(f"load at the end {os.getloadavg()[0]:.1f}")
        print("heal latency: fault injected -> owned field back (watch event)")
        for what, values in times.items():
            print(f"  {what:76s} {summary(values)}")
        if audit is None:
            print("no audit log (a cluster this script did not create): no stages")
            return
        names = {"operator": "operator: replicas, image, env (one request each)", **REFERENCES}
        for reference, rows in by_stage.items():
            print_stages(f"by stage, {names[reference]}", HEALER_STAGES, rows)
        print_stages("the operator's first part, by stage", OPERATOR_STAGES, operator_rows)
        print(
            f"  corrections from the watch event on the loop (hot path): {hot}"
            f" of {len(operator_rows)}"
        )
        print("the API server's work on the same restoring patch, by when it arrives")
        for delay, values in lates.items():
            what = f"sent {delay:.0f} s after the fault (nothing else heals it)"
            print(f"  {what:76s} {summary(values, 'ms')}")


if __name__ == "__main__":
    main()
