"""The real Argo CD controllers (built from github.com/argoproj/argo-cd/v3) against the real
cluster, with Debian's Redis, rendering charts/webapp from the toolkit's local Helm repository.
Nothing here imitates Argo CD: every sync and every heal is its application controller's."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from kubernetes import client

from compare.approaches.argocd.application import (
    apply_application,
    delete_application,
    read_application,
    wait_application,
)
from compare.approaches.argocd.controllers import (
    ARGOCD,
    PROCESSES,
    REDIS,
    check_running,
    process_ready,
    redis_ping,
    start_argocd,
)
from compare.approaches.argocd.install import APPLICATION_CONTROLLER, REPO_SERVER
from compare.cluster import ClusterTarget
from compare.deploy.processes import ProcessSet, alive, terminate
from compare.errors import CompareError
from tests.approaches.argocd.helpers import argocd_application
from tests.helpers import make_webapp

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("argocd_cleanup")]

SYNC_TIMEOUT_S = 180.0


def wait_for(check: Callable[[], bool], timeout: float) -> float | None:
    """Seconds until check() is true (polled every 100 ms), None when it never was."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():
            return time.monotonic() - started
        time.sleep(0.1)
    return None


@pytest.fixture
def argocd(cluster: ClusterTarget) -> ProcessSet:
    return start_argocd(cluster, timeout=120)


@pytest.fixture
def application(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, argocd: ProcessSet
) -> Iterator[str]:
    """An Application of charts/webapp in the test's namespace, Synced and Healthy; its name."""
    assert argocd.repository_url is not None
    app = argocd_application(
        make_webapp("argo", replicas=2), namespace, repository_url=argocd.repository_url
    )
    name = app["metadata"]["name"]
    assert app["metadata"]["namespace"] == namespace
    apply_application(cluster, app)
    try:
        wait_application(cluster, api, namespace, name, timeout=SYNC_TIMEOUT_S)
        yield name
    finally:
        # Argo CD (its resources finalizer) deletes what it deployed, then the Application:
        # it must run for that (a test may have stopped part of it).
        start_argocd(cluster, timeout=120)
        delete_application(cluster, api, namespace, name, timeout=120)


def test_processes_start_healthy_on_loopback_and_stop(cluster: ClusterTarget) -> None:
    handle = start_argocd(cluster, timeout=120)
    assert handle.running
    assert set(handle.processes) == set(PROCESSES)
    assert all(process_ready(p) for p in handle.processes.values())
    # Redis listens on the loopback port the set records.
    assert redis_ping(handle.settings["redis_port"])
    # Starting again is idempotent: the same processes.
    again = start_argocd(cluster, timeout=120)
    assert {n: p.pid for n, p in again.processes.items()} == {
        n: p.pid for n, p in handle.processes.items()
    }
    stopped = ARGOCD.stop(cluster)
    assert set(stopped) == set(PROCESSES)
    assert not any(alive(p) for p in handle.processes.values())
    assert ARGOCD.status(cluster).processes == {}
    # What `compare cluster down` does: nothing of it is left on this machine.
    again = start_argocd(cluster, timeout=120)
    ARGOCD.forget(cluster)
    assert not any(alive(p) for p in again.processes.values())
    assert not again.state_dir.exists()
    assert not redis_ping(again.settings["redis_port"])


def test_synced_healthy_and_a_drift_is_healed_by_argocds_self_heal(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, application: str
) -> None:
    apps = client.AppsV1Api(api)
    deployment = apps.read_namespaced_deployment("argo", namespace)
    assert deployment.spec.replicas == 2
    # Argo CD v3 tracks what it deployed by its annotation: this Deployment is the Application's.
    tracking = (deployment.metadata.annotations or {}).get("argocd.argoproj.io/tracking-id", "")
    assert tracking == f"{namespace}_{application}:apps/Deployment:{namespace}/argo", tracking
    synced = read_application(api, namespace, application)
    assert synced is not None
    first = synced["status"]["operationState"]["startedAt"]

    apps.patch_namespaced_deployment("argo", namespace, {"spec": {"replicas": 5}})
    assert apps.read_namespaced_deployment("argo", namespace).spec.replicas == 5

    healed = wait_for(
        lambda: apps.read_namespaced_deployment("argo", namespace).spec.replicas == 2, 90
    )
    assert healed is not None, "Argo CD did not restore the replicas"
    # Argo CD's own record of the heal: an automated sync operation after the first one, of
    # just the resource that drifted (self-heal syncs what is OutOfSync; such a selective sync
    # adds no history entry).
    assert wait_for(lambda: _phase(api, namespace, application) == "Succeeded", 30) is not None
    app = read_application(api, namespace, application)
    assert app is not None
    operation = app["status"]["operationState"]
    assert operation["startedAt"] >= first and operation != synced["status"]["operationState"]
    assert operation["phase"] == "Succeeded"
    assert operation["operation"]["initiatedBy"].get("automated") is True
    assert operation["operation"]["sync"]["resources"] == [
        {"group": "apps", "kind": "Deployment", "name": "argo"}
    ]
    assert wait_for(lambda: _sync_status(api, namespace, application) == "Synced", 30) is not None


def _phase(api: client.ApiClient, namespace: str, name: str) -> str | None:
    app = read_application(api, namespace, name)
    return ((app or {}).get("status") or {}).get("operationState", {}).get("phase")


def _sync_status(api: client.ApiClient, namespace: str, name: str) -> str | None:
    app = read_application(api, namespace, name)
    return ((app or {}).get("status") or {}).get("sync", {}).get("status")


def test_controller_down_and_redis_down_are_one_line_errors(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, application: str
) -> None:
    handle = check_running(cluster)
    terminate(handle.processes[APPLICATION_CONTROLLER])
    with pytest.raises(CompareError) as down:
        check_running(cluster)
    assert f"Argo CD's {APPLICATION_CONTROLLER} is not running" in down.value.message
    assert "\n" not in down.value.message
    with pytest.raises(CompareError, match=APPLICATION_CONTROLLER):
        wait_application(cluster, api, namespace, application, timeout=30)

    # Started again, the controllers and Redis are back; then Redis alone goes.
    restarted = start_argocd(cluster, timeout=120)
    assert restarted.running
    terminate(restarted.processes[REDIS])
    with pytest.raises(CompareError) as redis_down:
        check_running(cluster)
    assert f"Argo CD's {REDIS} is not running" in redis_down.value.message
    # A new Redis restarts both controllers: their Redis address is fixed at their start.
    again = start_argocd(cluster, timeout=120)
    assert again.running
    for name in (REPO_SERVER, APPLICATION_CONTROLLER):
        assert again.processes[name].pid != restarted.processes[name].pid


def test_missing_binaries_leave_nothing_running(cluster: ClusterTarget, tmp_path: Path) -> None:
    ARGOCD.stop(cluster)
    with pytest.raises(CompareError) as missing:
        start_argocd(cluster, bin_dir=tmp_path)
    assert "argocd binary is missing" in missing.value.message
    assert not any(alive(p) for p in ARGOCD.status(cluster).processes.values())


def test_a_controller_runs_with_the_self_heal_timing_asked_for(cluster: ClusterTarget) -> None:
    timing = {APPLICATION_CONTROLLER: ["--self-heal-backoff-timeout-seconds=0"]}
    first = start_argocd(cluster, timeout=120)
    tuned = start_argocd(cluster, extra_args=timing, timeout=120)
    controller = tuned.processes[APPLICATION_CONTROLLER]
    assert controller.pid != first.processes[APPLICATION_CONTROLLER].pid
    cmdline = Path(f"/proc/{controller.pid}/cmdline").read_bytes().split(b"\0")
    assert b"--self-heal-backoff-timeout-seconds=0" in cmdline
    # The rest kept running; asking again for the same is a no-op.
    for name in (REDIS, REPO_SERVER):
        assert tuned.processes[name].pid == first.processes[name].pid
    again = start_argocd(cluster, extra_args=timing, timeout=120)
    assert again.processes[APPLICATION_CONTROLLER].pid == controller.pid
    # Back to the defaults for the other tests.
    assert (
        start_argocd(cluster, timeout=120).processes[APPLICATION_CONTROLLER].pid != controller.pid
    )
