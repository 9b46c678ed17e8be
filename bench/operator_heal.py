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

Then the operator's heals by stage, from its own log line of each correction (monotonic
clock): the event's arrival to the reconcile's start, the start to the correcting request, the
request's round trip; and, when this script creates the embedded cluster (with the audit
policy of `bench/operator_requests.py`), the API server's own time for that request (audit
`requestReceivedTimestamp` to `stageTimestamp`): the round trip minus it is what the client
library and the loopback connection cost.

    .venv/bin/python bench/operator_heal.py [--trials 20] [--cluster NAME | --kubeconfig FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import threading
import time
import uuid
from collections.abc import Callable
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
from operator_requests import AUDIT_POLICY, audit_events, audit_size

from compare.approaches import arms, builtin_target
from compare.approaches.operator import Operator
from compare.cluster import EmbeddedCluster
from compare.judge.heal import restoring_patch
from compare.judge.kinds import kind
from compare.judge.rest import request

REPLICAS = 3
FIELD_MANAGER = "bench-chaos"


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
            elif healed(obj, kind):
                self.healed_at = time.perf_counter()
                self._stream.stop()
                return

    def result(self, injected: float, timeout: float = 60) -> float:
        self._thread.join(timeout)
        if self.healed_at is None:
            raise SystemExit("a fault was not healed within 60 s")
        return self.healed_at - injected


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


def operator_trial(api: client.ApiClient, namespace: str, fault: str) -> float:
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
        injected = time.perf_counter()
        apps.delete_namespaced_deployment("heal", namespace)
        return timer.result(injected)
    body, faulty, healed = patches[fault]
    timer = Stopwatch(apps.list_namespaced_deployment, namespace, "heal", faulty, healed, rv)
    injected = time.perf_counter()
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
) -> float:
    """Scale `name` to 1 (another field manager) and time until the watch shows REPLICAS."""
    timer = Stopwatch(
        list_fn,
        namespace,
        name,
        lambda o, t: o.spec.replicas == 1,
        lambda o, t: o.spec.replicas == REPLICAS,
        resource_version,
    )
    injected = time.perf_counter()
    patch_fn(name, namespace, {"spec": {"replicas": 1}}, field_manager=FIELD_MANAGER)
    return timer.result(injected)


def go_trial(api: client.ApiClient, namespace: str, deployment: str) -> float:
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
                            query={"fieldManager": "bench-healer"},
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


def floor_trial(api: client.ApiClient, namespace: str, name: str) -> float:
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


STAGES = re.compile(
    r"/heal DriftCorrected: .*woken ([0-9.]+) ms after the event, request sent ([0-9.]+) ms"
    r" after waking, answered in ([0-9.]+) ms"
)
STAGE_NAMES = (
    "event -> reconcile starts (loop, slot)",
    "reconcile starts -> request sent (diff, patch)",
    "request sent -> answer decoded (round trip)",
    "of which the API server (audit)",
    "client + connection (round trip - server)",
)


class StageReader:
    """The stages of the operator's corrections of the `heal` Deployment since the last call:
    its log lines, and the API server's time for its PATCH (the audit log, if any)."""

    def __init__(self, log: Path, audit: Path | None) -> None:
        self.log, self.audit = log, audit
        self._log_at = log.stat().st_size if log.exists() else 0
        self._audit_at = audit_size(audit)

    def read(self) -> list[float] | None:
        """[woken, sent, answered, server, client] in ms for one correction, or None."""
        with self.log.open("rb") as handle:
            handle.seek(self._log_at)
            text = handle.read().decode("utf-8", "replace")
            self._log_at = handle.tell()
        found = STAGES.findall(text)
        end = audit_size(self.audit)
        patches = [
            e
            for e in (audit_events(self.audit, self._audit_at, end) if self.audit else [])
            if e.get("verb") == "patch"
            and (e.get("objectRef") or {}).get("resource") == "deployments"
            and (e.get("objectRef") or {}).get("name") == "heal"
        ]
        self._audit_at = end
        if len(found) != 1:
            return None  # a heal that took two corrections: not one request's stages
        stages = [float(v) for v in found[0]]
        if len(patches) == 1:
            received = datetime.fromisoformat(patches[0]["requestReceivedTimestamp"])
            done = datetime.fromisoformat(patches[0]["stageTimestamp"])
            server = (done - received).total_seconds() * 1000
            stages += [server, stages[2] - server]
        return stages


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--trials", type=int, default=20)
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
        healer = BareHealer(api, namespace, operators_deployment(api, namespace, FLOOR))
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
        stages: list[list[float]] = []
        try:
            for _ in range(args.trials):
                for fault in faults:
                    reader = StageReader(handle.state_dir / "operator.log", audit)
                    times[f"operator {fault}"].append(operator_trial(api, namespace, fault))
                    wait_for(partial(settled, apps, namespace, "heal"), timeout=60, what="settle")
                    found = reader.read() if fault != "deployment-deleted" else None
                    if found is not None:
                        stages.append(found)
                for reference, line in REFERENCES.items():
                    trial = floor_trial if reference == FLOOR else go_trial
                    times[line].append(trial(api, namespace, reference))
                    wait_for(
                        partial(settled, apps, namespace, reference), timeout=60, what="settle"
                    )
        finally:
            healer.stop()
            delete_namespace(api, namespace)
        print("heal latency: fault injected -> owned field back (watch event)")
        for what, values in times.items():
            print(f"  {what:76s} {summary(values)}")
        print("the operator's corrections by stage (replicas, image, env; one request each)")
        for i, what in enumerate(STAGE_NAMES):
            values = [trial[i] for trial in stages if len(trial) > i]
            print(f"  {what:76s} {summary(values, 'ms')}")


if __name__ == "__main__":
    main()
