"""The operator process's life: restarts cost no writes, work left while it was down gets done
when it is back, and with two replicas exactly one leads, the other taking over when the
leader is killed (and at once when it stops gracefully and releases the Lease).

These tests stop, kill and add operator processes; `restore_operator` leaves the shared one
running afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import (
    OperatorHandle,
    install_operator,
    start_operator,
    stop_operator,
)
from compare.approaches.operator.process import DEFAULT_INSTANCE, OPERATOR, health, spawn_operator
from compare.cluster import ClusterTarget
from compare.deploy.local import CLUSTER_UID_KEY, free_port
from compare.deploy.processes import LocalProcess, alive, read_process, terminate
from compare.webapp import API_GROUP, API_VERSION, PLURAL
from tests.helpers import eventually, make_webapp, raw
from webapp_operator.names import LEASE_NAME, OPERATOR_NAMESPACE, REGISTRY_CONFIGMAP

from .conftest import FAST
from .helpers import (
    Running,
    get_deployment,
    get_service,
    get_webapp,
    run_webapp,
    webapp_events,
)

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("restore_operator")]


def _latest_log(info: LocalProcess) -> str:
    """The log of the current process only (the file accumulates every start)."""
    return info.log_path.read_text().rsplit("\n--- ", 1)[-1]


def _process(cluster: ClusterTarget, instance: str = DEFAULT_INSTANCE) -> LocalProcess:
    info = read_process(OPERATOR.state_dir(cluster), instance)
    assert info is not None
    return info


def _lease(api: client.ApiClient) -> dict[str, Any]:
    lease = raw(client.CoordinationV1Api(api).read_namespaced_lease, LEASE_NAME, OPERATOR_NAMESPACE)
    assert lease is not None
    return lease


def _registry(api: client.ApiClient) -> dict[str, str]:
    cm = raw(
        client.CoreV1Api(api).read_namespaced_config_map, REGISTRY_CONFIGMAP, OPERATOR_NAMESPACE
    )
    return dict((cm or {}).get("data") or {})


def _versions(run: Running) -> dict[str, str]:
    dep, svc = run.live()
    webapp = get_webapp(run.api, run.namespace, run.webapp.name)
    cm = raw(
        client.CoreV1Api(run.api).read_namespaced_config_map, REGISTRY_CONFIGMAP, OPERATOR_NAMESPACE
    )
    return {
        name: obj["metadata"]["resourceVersion"]
        for name, obj in (
            ("webapp", webapp),
            ("deployment", dep),
            ("service", svc),
            ("registry", cm),
        )
        if obj is not None
    }


def _settled(run: Running) -> bool:
    """Nobody (operator or controller) has anything left to write for this WebApp."""
    dep, _ = run.live()
    status = (dep or {}).get("status") or {}
    want = run.webapp.spec.replicas
    return (
        status.get("observedGeneration") == (dep or {}).get("metadata", {}).get("generation")
        and status.get("readyReplicas") == status.get("availableReplicas") == want
        and (get_webapp(run.api, run.namespace, run.webapp.name) or {})
        .get("status", {})
        .get("phase")
        == "Running"
        # The registry's writer records a new WebApp within a second (`LINGER_S`).
        and f"{run.namespace}.{run.webapp.name}" in _registry(run.api)
    )


def _webapps_going(api: client.ApiClient) -> int:
    """WebApps being deleted, or in a namespace being deleted (not yet reached by the namespace
    controller): each of them still has a cleanup to run."""
    terminating = {
        ns.metadata.name
        for ns in client.CoreV1Api(api).list_namespace().items
        if ns.status.phase == "Terminating"
    }
    items = client.CustomObjectsApi(api).list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)
    return len(
        [
            i
            for i in items["items"]
            if i["metadata"].get("deletionTimestamp") or i["metadata"]["namespace"] in terminating
        ]
    )


def _active_webapps(api: client.ApiClient) -> int:
    items = client.CustomObjectsApi(api).list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)
    return len([i for i in items["items"] if not i["metadata"].get("deletionTimestamp")])


@pytest.fixture
def running(api: client.ApiClient, namespace: str, operator: OperatorHandle) -> Running:
    return run_webapp(api, namespace, make_webapp("shop", replicas=3))


def test_restart_causes_no_writes(
    cluster: ClusterTarget, api: client.ApiClient, running: Running
) -> None:
    eventually(lambda: _settled(running), what="steady state")
    # Earlier tests' namespaces are still being deleted: their cleanups write the registry.
    eventually(lambda: _webapps_going(api) == 0, timeout=60, what="no WebApp being deleted")
    before = _versions(running)
    lease_before = _lease(api)["spec"]

    stop_operator(cluster)  # graceful: releases the Lease
    handle = start_operator(cluster, options=FAST)
    info = _process(cluster)
    # The same local replica, started again: same identity, a new term of the Lease.
    lease_after = _lease(api)["spec"]
    assert handle.ready and lease_after["holderIdentity"] == lease_before["holderIdentity"]
    assert lease_after["acquireTime"] != lease_before["acquireTime"]
    # Every WebApp was reconciled by the new process (its daemons start with a reconcile)...
    expected = _active_webapps(api)
    eventually(
        lambda: (health(info) or {}).get("reconciles", 0) >= expected,
        what=f"{expected} reconciles after the restart",
    )
    # ... and none of them needed a write: same resourceVersions everywhere.
    assert _versions(running) == before
    assert (health(info) or {}).get("changes") == 0


def test_deletion_while_down_completes_after_restart(
    cluster: ClusterTarget, api: client.ApiClient, running: Running
) -> None:
    key = f"{running.namespace}.shop"
    eventually(lambda: key in _registry(api), what="registry entry")
    stop_operator(cluster)
    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        API_GROUP, API_VERSION, running.namespace, PLURAL, "shop"
    )
    # Nobody runs the finalizer: the WebApp waits, Terminating, with everything in place.
    pending = get_webapp(api, running.namespace, "shop")
    assert pending is not None and pending["metadata"]["deletionTimestamp"]
    assert pending["metadata"]["finalizers"] == ["example.com/cleanup"]
    assert key in _registry(api)
    assert running.live()[0] is not None

    start_operator(cluster, options=FAST)
    eventually(lambda: get_webapp(api, running.namespace, "shop") is None, what="WebApp gone")
    assert key not in _registry(api)
    # The garbage collector learns of a CRD installed after it started at its discovery
    # resync (every 30 s): run first on a fresh cluster, the WebApp's kind may be that new.
    eventually(
        lambda: running.live() == (None, None), timeout=75, what="children garbage-collected"
    )


def test_drift_while_killed_is_healed_after_restart(
    cluster: ClusterTarget, api: client.ApiClient, running: Running
) -> None:
    stop_operator(cluster, kill=True)  # no graceful exit, the Lease is not released
    client.AppsV1Api(api).patch_namespaced_deployment(
        "shop",
        running.namespace,
        {
            "spec": {
                "replicas": 1,
                "template": {"spec": {"containers": [{"name": "webapp", "image": "evil:v9"}]}},
            }
        },
        field_manager="chaos-test",
    )
    dep = get_deployment(api, running.namespace, "shop")
    assert dep is not None and dep["spec"]["replicas"] == 1  # nobody heals while it is down

    started = time.monotonic()
    start_operator(cluster, options=FAST)  # waits out the dead leader's Lease first
    eventually(running.healed, what="healed after restart")
    heal = time.monotonic() - started
    print(f"\nkilled operator: restart + heal took {heal:.2f}s (lease {FAST.lease_duration}s)")
    eventually(
        lambda: running.event("DriftCorrected", "spec.replicas", "containers[webapp].image"),
        what="DriftCorrected event",
    )


def _spawn_replica(cluster: ClusterTarget, instance: str) -> LocalProcess:
    directory = OPERATOR.state_dir(cluster)
    settings = json.loads((directory / "settings.json").read_text())
    return spawn_operator(
        directory,
        instance=instance,
        kubeconfig=directory / "kubeconfig.yaml",
        health_port=free_port(),
        webhook_port=settings.get("webhook_port"),
        cert_dir=directory / "certs",
        options=FAST,
        identity=f"{instance}-{int(time.time())}",
    )


def test_leader_failover(cluster: ClusterTarget, api: client.ApiClient, namespace: str) -> None:
    leader = _process(cluster)
    leader_id = (health(leader) or {})["identity"]
    standby = _spawn_replica(cluster, "standby")
    try:
        standing_by = eventually(lambda: health(standby), what="standby up")
        assert standing_by["role"] == "standby"
        assert standing_by["leading"] is False and standing_by["ready"] is False
        assert _lease(api)["spec"]["holderIdentity"] == leader_id

        # Exactly one replica reconciles: the leader's events, none by the standby.
        run = run_webapp(api, namespace, make_webapp("shop", replicas=2))
        created = [e for e in webapp_events(api, namespace, "shop") if e["reason"] == "Created"]
        assert {e["reportingInstance"] for e in created} == {leader_id}
        assert (health(standby) or {})["reconciles"] == 0
        transitions = _lease(api)["spec"].get("leaseTransitions") or 0

        killed = time.monotonic()
        terminate(leader, kill=True)
        eventually(
            lambda: (health(standby) or {}).get("ready"),
            timeout=FAST.lease_duration + 15,
            what="standby leading",
        )
        failover = time.monotonic() - killed
        lease = _lease(api)["spec"]
        assert lease["holderIdentity"] == (health(standby) or {})["identity"]
        assert lease["leaseTransitions"] == transitions + 1
        # A figure, not a pass/fail line (bench/operator_failover.py measures it properly):
        # expiry is counted from the last renewal the standby observed (client-go semantics).
        print(
            f"\nleader failover after SIGKILL: {failover:.2f}s "
            f"(lease {FAST.lease_duration}s, retry {FAST.lease_retry_period}s)"
        )

        # The new leader heals.
        client.AppsV1Api(api).patch_namespaced_deployment(
            "shop", namespace, {"spec": {"replicas": 1}}, field_manager="chaos-test"
        )
        eventually(run.healed, what="healed by the new leader")
        drift = eventually(lambda: run.event("DriftCorrected", "spec.replicas"), what="event")
        assert drift["reportingInstance"] == (health(standby) or {})["identity"]

        # A graceful stop releases the Lease: the next replica leads at once, without
        # waiting for it to expire.
        stopped = time.monotonic()
        terminate(standby)
        released = _lease(api)["spec"]
        assert not released.get("holderIdentity")
        assert released["leaseDurationSeconds"] == 1
        start_operator(cluster, options=FAST)
        handover = time.monotonic() - stopped
        print(f"graceful handover (SIGTERM, release, new process leads): {handover:.2f}s")
        new_leader = (health(_process(cluster)) or {})["identity"]
        assert _lease(api)["spec"]["holderIdentity"] == new_leader
        assert "took the lease from nobody (it was free)" in _latest_log(_process(cluster))
    finally:
        terminate(standby, kill=True)
    assert get_service(api, namespace, "shop") is not None


def test_webhook_only_replica_serves_admission_and_never_reconciles(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    """The in-cluster webhook Deployment's mode: every replica answers AdmissionReviews over
    TLS (verified against the project's CA), none takes the Lease or reconciles."""
    directory = OPERATOR.state_dir(cluster)
    port = free_port()
    info = spawn_operator(
        directory,
        instance="webhook",
        kubeconfig=directory / "kubeconfig.yaml",
        health_port=free_port(),
        webhook_port=port,
        cert_dir=directory / "certs",
        options=FAST,
        webhook_only=True,
    )
    try:
        summary = eventually(
            lambda: (health(info) or {}).get("ready") and health(info), what="webhook replica ready"
        )
        assert summary["role"] == "webhook" and summary["leading"] is False

        def review(spec: dict[str, Any]) -> dict[str, Any]:
            obj = {
                "apiVersion": "example.com/v1",
                "kind": "WebApp",
                "metadata": {"name": "x", "namespace": namespace},
                "spec": spec,
            }
            request = {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {
                    "uid": "test-1",
                    "kind": {"group": "example.com", "version": "v1", "kind": "WebApp"},
                    "resource": {"group": "example.com", "version": "v1", "resource": "webapps"},
                    "operation": "CREATE",
                    "userInfo": {"username": "tester"},
                    "name": "x",
                    "namespace": namespace,
                    "object": obj,
                },
            }
            tls = ssl.create_default_context(cafile=str(directory / "certs" / "ca.crt"))
            sent = urllib.request.Request(
                f"https://127.0.0.1:{port}/validate-webapp",
                data=json.dumps(request).encode(),
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(sent, context=tls, timeout=5) as answer:
                result: dict[str, Any] = json.loads(answer.read())["response"]
                return result

        assert review({"image": "shop:v1"})["allowed"] is True
        denied = review({"image": "shop:v1", "replicas": 99})
        assert denied["allowed"] is False
        assert "spec.replicas: 99 exceeds the ceiling of 50" in denied["status"]["message"]
        after = health(info) or {}
        assert after["reconciles"] == 0 and after["leading"] is False
        assert _lease(api)["spec"]["holderIdentity"] != summary["identity"]
    finally:
        terminate(info)


def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if fields[1] == str(pid) and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def test_a_crashed_operator_is_restarted_and_takes_its_own_lease_back(
    cluster: ClusterTarget, api: client.ApiClient, running: Running
) -> None:
    """The local runner's supervisor does the kubelet's job: the operator process dies (here
    SIGKILL, as after a lost Lease it exits 1), a new one starts with the same identity and
    leads again at once — not after the lease duration — and heals."""
    info = _process(cluster)
    (child,) = _children(info.pid)
    holder = _lease(api)["spec"]["holderIdentity"]
    os.kill(child, signal.SIGKILL)
    killed = time.monotonic()

    def restarted() -> bool:
        now = _children(info.pid)
        return bool(now) and now != [child] and (health(info) or {}).get("role") == "leader"

    eventually(restarted, timeout=30, what="the operator restarted and leading")
    assert _lease(api)["spec"]["holderIdentity"] == holder
    client.AppsV1Api(api).patch_namespaced_deployment(
        "shop", running.namespace, {"spec": {"replicas": 1}}, field_manager="chaos-test"
    )
    eventually(running.healed, timeout=20, what="drift healed by the restarted operator")
    print(f"\nrestarted and healed {time.monotonic() - killed:.1f}s after the SIGKILL")


def test_an_operator_left_by_an_earlier_cluster_of_this_name_is_replaced(
    cluster: ClusterTarget, api: client.ApiClient, operator: OperatorHandle
) -> None:
    # A cluster deleted without `compare cluster down` and started again under its name has a
    # new kube-system uid: the process holding the old cluster's token is stopped, and its
    # certificates go with it.
    old = _process(cluster)
    settings_path = OPERATOR.state_dir(cluster) / "settings.json"
    settings = json.loads(settings_path.read_text())
    this_cluster = client.CoreV1Api(api).read_namespace("kube-system").metadata.uid
    assert settings[CLUSTER_UID_KEY] == this_cluster
    old_ca = (OPERATOR.state_dir(cluster) / "certs" / "ca.crt").read_bytes()
    settings_path.write_text(json.dumps({**settings, CLUSTER_UID_KEY: "an-earlier-cluster"}))
    handle = install_operator(cluster, options=FAST)
    new = _process(cluster)
    assert handle.ready and new.pid != old.pid
    assert not alive(old)
    assert (OPERATOR.state_dir(cluster) / "certs" / "ca.crt").read_bytes() != old_ca
    assert json.loads(settings_path.read_text())[CLUSTER_UID_KEY] == this_cluster
