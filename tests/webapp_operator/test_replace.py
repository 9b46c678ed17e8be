"""What no patch can heal, healed by the real operator: a pod changed in place is deleted so
that its ReplicaSet replaces it, and a Service replaced by a headless copy (an immutable
clusterIP) is deleted and created again; each with an Event on the WebApp saying why.
"""

from __future__ import annotations

import copy
import time
from typing import Any

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import OperatorHandle
from tests.helpers import eventually, make_webapp
from webapp_operator.builders import selector_string

from .helpers import Running, get_deployment, get_service, run_webapp

pytestmark = pytest.mark.cluster


@pytest.fixture
def running(api: client.ApiClient, namespace: str, operator: OperatorHandle) -> Running:
    return run_webapp(api, namespace, make_webapp("shop", replicas=2))


def _pods(run: Running) -> list[Any]:
    pods = client.CoreV1Api(run.api).list_namespaced_pod(
        run.namespace, label_selector=selector_string("shop")
    )
    return [p for p in pods.items if p.metadata.deletion_timestamp is None]


def test_a_pod_changed_in_place_is_replaced(running: Running) -> None:
    core = client.CoreV1Api(running.api)

    def two() -> list[Any] | None:
        pods = _pods(running)
        return pods if len(pods) == 2 else None

    pods = eventually(two, what="two pods")
    victim = pods[0]
    core.patch_namespaced_pod(
        victim.metadata.name,
        running.namespace,
        {"spec": {"containers": [{"name": "webapp", "image": "myapp:in-place"}]}},
    )

    def replaced() -> list[Any] | None:
        now = _pods(running)
        uids = {p.metadata.uid for p in now}
        images = {c.image for p in now for c in p.spec.containers}
        ok = victim.metadata.uid not in uids and len(now) == 2 and "myapp:in-place" not in images
        return now if ok else None

    eventually(replaced, what="the changed pod replaced by a new one")
    event: dict[str, Any] = eventually(
        lambda: running.event("PodReplaced", victim.metadata.name, "myapp:in-place"),
        what="a PodReplaced event naming the pod and its image",
    )
    assert "deleted so that its ReplicaSet replaces it" in event["message"]
    # The healthy pod was left alone.
    assert pods[1].metadata.uid in {p.metadata.uid for p in _pods(running)}


def _headless_copy(run: Running) -> str:
    """Delete the Service and create a headless copy (a new uid), as the catalogue's
    `service-recreated-headless` does; retried while the operator takes the name first."""
    core = client.CoreV1Api(run.api)
    old = run.api.sanitize_for_serialization(core.read_namespaced_service("shop", run.namespace))
    body = copy.deepcopy(old)
    body.pop("status", None)
    for key in ("uid", "resourceVersion", "creationTimestamp", "managedFields"):
        body["metadata"].pop(key, None)
    body["spec"]["clusterIP"] = "None"
    body["spec"]["clusterIPs"] = ["None"]
    deadline = time.monotonic() + 20
    while True:
        try:
            core.delete_namespaced_service("shop", run.namespace)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        try:
            made = core.create_namespaced_service(run.namespace, body)
            return str(made.metadata.uid)
        except client.ApiException as exc:
            if exc.status != 409 or time.monotonic() > deadline:
                raise
        time.sleep(0.05)


def test_a_headless_copy_of_the_service_is_recreated_with_a_cluster_ip(running: Running) -> None:
    copied = _headless_copy(running)

    def recreated() -> dict[str, Any] | None:
        svc = get_service(running.api, running.namespace, "shop")
        if svc is None or svc["metadata"]["uid"] == copied:
            return None
        return svc if svc["spec"].get("clusterIP") not in (None, "", "None") else None

    svc = eventually(recreated, what="a Service with a clusterIP, new uid")
    assert svc["metadata"]["uid"] != running.service["metadata"]["uid"]
    event: dict[str, Any] = eventually(
        lambda: running.event("Recreated", "Service", "clusterIP", "immutable"),
        what="a Recreated event naming the clusterIP",
    )
    assert "deleted and re-created" in event["message"]
    eventually(running.healed, what="the children as desired again")


def test_a_deployment_with_another_selector_is_recreated(running: Running) -> None:
    """A copy whose selector (immutable) selects fewer labels: the restoring patch is refused
    with 422 `field is immutable`, so the operator deletes and creates it."""
    apps = client.AppsV1Api(running.api)
    old = running.api.sanitize_for_serialization(
        apps.read_namespaced_deployment("shop", running.namespace)
    )
    body = copy.deepcopy(old)
    body.pop("status", None)
    for key in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        body["metadata"].pop(key, None)
    body["spec"]["selector"] = {"matchLabels": {"app.kubernetes.io/instance": "shop"}}
    deadline = time.monotonic() + 20
    while True:
        try:
            apps.delete_namespaced_deployment("shop", running.namespace)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
        try:
            copied = str(apps.create_namespaced_deployment(running.namespace, body).metadata.uid)
            break
        except client.ApiException as exc:
            if exc.status != 409 or time.monotonic() > deadline:
                raise
        time.sleep(0.05)

    def recreated() -> dict[str, Any] | None:
        dep = get_deployment(running.api, running.namespace, "shop")
        if dep is None or dep["metadata"]["uid"] == copied:
            return None
        return dep if dep["spec"]["selector"] == old["spec"]["selector"] else None

    eventually(recreated, what="the Deployment re-created with its selector, new uid")
    eventually(
        lambda: running.event("Recreated", "Deployment", "selector", "immutable"),
        what="a Recreated event naming the selector",
    )


def test_a_disruption_budget_is_respected(running: Running) -> None:
    """A PodDisruptionBudget that selects the pods and allows no disruption: the changed pod is
    not evicted (a Warning says why); once the budget allows one, it is replaced."""
    policy = client.PolicyV1Api(running.api)
    policy.create_namespaced_pod_disruption_budget(
        running.namespace,
        {
            "metadata": {"name": "shop"},
            "spec": {
                "minAvailable": 2,
                "selector": {"matchLabels": {"app.kubernetes.io/instance": "shop"}},
            },
        },
    )

    def settled() -> bool:
        pdb = policy.read_namespaced_pod_disruption_budget("shop", running.namespace)
        status = pdb.status
        return bool(status and status.current_healthy == 2 and status.disruptions_allowed == 0)

    eventually(settled, what="the budget computed: no disruption allowed")
    victim = _pods(running)[0]
    client.CoreV1Api(running.api).patch_namespaced_pod(
        victim.metadata.name,
        running.namespace,
        {"spec": {"containers": [{"name": "webapp", "image": "myapp:in-place"}]}},
    )
    eventually(
        lambda: running.event("DisruptionBudget", victim.metadata.name),
        what="a DisruptionBudget warning naming the pod",
    )
    assert victim.metadata.uid in {p.metadata.uid for p in _pods(running)}
    assert running.event("PodReplaced") is None

    policy.patch_namespaced_pod_disruption_budget(
        "shop", running.namespace, {"spec": {"minAvailable": 1}}
    )
    eventually(
        lambda: victim.metadata.uid not in {p.metadata.uid for p in _pods(running)} or None,
        what="the changed pod evicted once the budget allows it",
    )
    event: dict[str, Any] = eventually(
        lambda: running.event("PodReplaced", victim.metadata.name),
        what="a PodReplaced event",
    )
    assert "evicted so that its ReplicaSet replaces it" in event["message"]
