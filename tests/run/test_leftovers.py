"""A finalizer a fault left behind never keeps a trial's namespace: it is released before the
namespace is deleted; the system's own finalizers are left to their controllers."""

from __future__ import annotations

import time

import pytest
from kubernetes import client

from compare.cluster import ClusterTarget
from compare.run.leftovers import release_finalizers, system_finalizer

pytestmark = pytest.mark.cluster


def test_system_finalizers_are_told_from_foreign_ones() -> None:
    system = ["kubernetes.io/pvc-protection", "batch.kubernetes.io/job-tracking", "orphan"]
    assert all(system_finalizer(f) for f in system)
    foreign = ["chaos.example.com/hold", "finalizers.fluxcd.io", "kubernetes.io.evil.com/x"]
    assert not any(system_finalizer(f) for f in foreign)


def test_an_object_stuck_terminating_is_released_and_its_namespace_goes(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    hold = {"metadata": {"name": "stuck", "finalizers": ["chaos.example.com/hold"]}}
    core.create_namespaced_config_map(namespace, hold)
    core.delete_namespaced_config_map("stuck", namespace)  # stuck terminating
    kept = {"metadata": {"name": "kept", "finalizers": ["chaos.example.com/hold"]}}
    core.create_namespaced_service_account(namespace, kept)  # would get stuck with the namespace
    released = release_finalizers(api, namespace)
    assert sorted(released) == [
        "ConfigMap/stuck: chaos.example.com/hold",
        "ServiceAccount/kept: chaos.example.com/hold",
    ]
    core.delete_namespace(namespace)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            core.read_namespace(namespace)
        except client.ApiException as exc:
            assert exc.status == 404
            return
        time.sleep(0.2)
    pytest.fail(f"namespace {namespace} still there after its finalizers were released")
