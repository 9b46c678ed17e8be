"""Pods judged against their template, objects being deleted, and a DaemonSet's revision, on
the real API server: what pod creation adds is allowed, a pod changed in place is drift, a
foreign pod the selector matches is drift, a finalizer-held deletion is drift."""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from compare.approaches import desired_objects
from compare.cluster import ClusterTarget
from compare.judge import problems, read, wait_until_holds, with_api_defaults
from tests.helpers import deploy_webapp, make_webapp, pods_of

pytestmark = pytest.mark.cluster


def _problems(api: client.ApiClient, namespace: str) -> list[str]:
    desired = desired_objects(api, "helm", make_webapp(replicas=2), namespace)
    return problems(desired, read(api, namespace, desired.kinds))


def test_real_pods_match_their_template_and_a_pod_changed_in_place_is_drift(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    deploy_webapp(cluster, make_webapp(replicas=2), namespace, timeout=60)
    # Everything the scheduler, admission and the controllers added to the real pods is
    # allowed: the state holds.
    assert _problems(api, namespace) == []
    pod = pods_of(api, namespace, "shop")[0]
    core = client.CoreV1Api(api)
    # `kubectl set image pod/...`: the API allows it, nothing restores it.
    core.patch_namespaced_pod(
        pod.metadata.name,
        namespace,
        {"spec": {"containers": [{"name": "webapp", "image": "shop:in-place"}]}},
    )
    found = _problems(api, namespace)
    assert f"pod[{pod.metadata.name}].spec.containers[webapp].image: want 'shop:v1', got" in (
        found[0] if found else ""
    ), found
    # A label added to the running pod in place is drift too (closed world over labels).
    other = pods_of(api, namespace, "shop")[1]
    core.patch_namespaced_pod(other.metadata.name, namespace, {"metadata": {"labels": {"x": "y"}}})
    assert f"pod[{other.metadata.name}].metadata.labels.x: added 'y'" in _problems(api, namespace)


def test_a_foreign_pod_the_selector_matches_is_drift(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    deploy_webapp(cluster, make_webapp(replicas=2), namespace, timeout=60)
    labels = pods_of(api, namespace, "shop")[0].metadata.labels
    selector = {k: v for k, v in labels.items() if k != "pod-template-hash"}
    body = {
        "metadata": {"name": "intruder", "labels": selector},
        "spec": {"containers": [{"name": "c", "image": "intruder:v1"}]},
    }
    client.CoreV1Api(api).create_namespaced_pod(namespace, body)
    found = _problems(api, namespace)
    assert any(p.startswith("pod[intruder]: matches the selector of deployment") for p in found)


def test_an_object_held_by_a_finalizer_while_being_deleted_is_drift(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    deploy_webapp(cluster, make_webapp(replicas=2), namespace, timeout=60)
    core = client.CoreV1Api(api)
    finalizer = "chaos.example.com/hold"
    core.patch_namespaced_service("shop", namespace, {"metadata": {"finalizers": [finalizer]}})
    core.delete_namespaced_service("shop", namespace)
    try:
        found = _problems(api, namespace)
        assert any(
            p.startswith("service: being deleted since") and finalizer in p for p in found
        ), found
    finally:
        core.patch_namespaced_service("shop", namespace, {"metadata": {"finalizers": None}})


DAEMONS: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "DaemonSet",
    "metadata": {"name": "agent", "labels": {"app": "agent"}},
    "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "updateStrategy": {"type": "OnDelete"},
        "template": {
            "metadata": {"labels": {"app": "agent"}},
            "spec": {
                "containers": [{"name": "agent", "image": "agent:v1"}],
                "tolerations": [{"operator": "Exists"}],
            },
        },
    },
}


def test_a_daemonset_under_on_delete_keeps_old_revision_pods_as_drift(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    apps = client.AppsV1Api(api)
    apps.create_namespaced_daemon_set(namespace, DAEMONS)
    desired = with_api_defaults(api, namespace, [DAEMONS])
    assert wait_until_holds(api, namespace, desired, timeout=60) == []
    # The template changed and changed back: revision 3 repeats revision 1 and the pods are
    # still revision 1's, so the state holds again.
    image = {"spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "v2"}]}}}}
    apps.patch_namespaced_daemon_set("agent", namespace, image)
    deadline = time.monotonic() + 30
    found: list[str] = []
    while time.monotonic() < deadline:
        found = problems(desired, read(api, namespace, desired.kinds))
        if any(p.startswith("pods.stale") for p in found):
            break
        time.sleep(0.2)
    # OnDelete: nothing replaces the pods of the old revision; they are drift, not healed.
    assert any(p.startswith("pods.stale") for p in found), found
    assert "daemonset.spec.template.spec.containers[agent].image: want 'agent:v1', got 'v2'" in (
        found
    )
    # Reverted: the old revision is current again and its pods are the current ones.
    back = {
        "spec": {"template": {"spec": {"containers": [{"name": "agent", "image": "agent:v1"}]}}}
    }
    apps.patch_namespaced_daemon_set("agent", namespace, back)
    assert wait_until_holds(api, namespace, desired, timeout=30) == []
