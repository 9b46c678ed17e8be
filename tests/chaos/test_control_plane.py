"""The control-plane actions against the real embedded cluster: a component killed or stopped
is really gone, comes back as a new process by kwokctl, the cluster works again afterwards,
and nothing is touched on a cluster that is not the embedded one."""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches.operator import Operator
from compare.approaches.operator.controllers import operator_status
from compare.chaos import probes
from compare.chaos.cluster import pointed_at
from compare.chaos.control_plane import (
    restart_control_plane_component,
    start_control_plane,
    stop_control_plane_component,
)
from compare.cli import app
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.cluster.embedded import COMPONENTS
from compare.paths import EXPERIMENTS_DIR
from compare.results import latest_run, load_results
from compare.webapp import load_webapp
from tests import helpers
from tests.chaos.test_standalone import chaos_run
from tests.helpers import deploy_builtin, deploy_webapp, undeploy_builtin

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator_left_as_found")]


@pytest.fixture
def embedded(cluster: ClusterTarget) -> EmbeddedCluster:
    found = EmbeddedCluster(cluster_key(cluster))
    assert found.kubeconfig.resolve() == cluster.kubeconfig.resolve(), (
        "these tests restart the control plane of the embedded test cluster"
    )
    return found


def wait_for(predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
    """A component's restart takes longer: a minute by default."""
    return helpers.eventually(predicate, timeout=timeout)


def _deployment(api: client.ApiClient, namespace: str, name: str = "cp") -> None:
    labels = {"app": name}
    body = client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=1,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(containers=[client.V1Container(name="a", image="a:1")]),
            ),
        ),
    )
    client.AppsV1Api(api).create_namespaced_deployment(namespace, body)


def _ready_pods(api: client.ApiClient, namespace: str) -> set[str]:
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace).items
    return {
        p.metadata.uid
        for p in pods
        if p.metadata.deletion_timestamp is None
        and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
    }


def _controllers_work(api: client.ApiClient, namespace: str) -> None:
    """The controller manager and the scheduler work: a deleted pod is replaced by a new
    Ready one."""
    before = wait_for(lambda: _ready_pods(api, namespace))
    core = client.CoreV1Api(api)
    for pod in core.list_namespaced_pod(namespace).items:
        core.delete_namespaced_pod(pod.metadata.name, namespace)
    wait_for(lambda: _ready_pods(api, namespace) - before)


def _config_map(api: client.ApiClient, namespace: str) -> None:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name="kept"), data={"k": "v"})
    client.CoreV1Api(api).create_namespaced_config_map(namespace, body)


@pytest.mark.parametrize("component", ["kube-apiserver", "etcd"])
def test_a_killed_component_comes_back_as_a_new_process_and_the_cluster_works(
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    embedded: EmbeddedCluster,
    component: str,
) -> None:
    _deployment(api, namespace)
    _config_map(api, namespace)
    wait_for(lambda: _ready_pods(api, namespace))
    old = embedded.component_pid(component)
    assert old is not None
    with pointed_at(cluster):
        out = restart_control_plane_component(component)
    assert out["component"] == component and out["signal"] == "SIGKILL"
    assert out["oldPid"] == old and out["newPid"] != old
    assert component in out["restarted"]
    # The old process is gone, the new one is this cluster's own binary.
    assert not Path(f"/proc/{old}").exists() or embedded.component_pid(component) != old
    assert embedded.component_pid(component) == out["newPid"]
    assert all(embedded.component_pid(name) is not None for name in COMPONENTS)
    assert 0 < out["downSeconds"] < 120
    # The API server answers again, with what etcd kept.
    kept = client.CoreV1Api(api).read_namespaced_config_map("kept", namespace)
    assert kept.data == {"k": "v"}
    _controllers_work(api, namespace)
    # The LoadBalancer address controller outlived it (it lists again): a new one gets an address.
    spec = {"type": "LoadBalancer", "selector": {"app": "cp"}, "ports": [{"port": 80}]}
    client.CoreV1Api(api).create_namespaced_service(
        namespace, {"metadata": {"name": "lb"}, "spec": spec}
    )
    assert helpers.load_balancer_address(api, namespace, "lb")


def test_a_stopped_controller_manager_heals_nothing_until_started_again(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, embedded: EmbeddedCluster
) -> None:
    _deployment(api, namespace)
    before = wait_for(lambda: _ready_pods(api, namespace))
    name = "kube-controller-manager"
    old = embedded.component_pid(name)
    with pointed_at(cluster):
        stopped = stop_control_plane_component(name)
        try:
            assert stopped == {"component": name, "signal": "SIGTERM", "oldPid": old}
            assert embedded.component_pid(name) is None
            assert not probes.embedded_control_plane_runs()
            # Its port stays reserved while it is down: nobody else can listen on it.
            (port,) = embedded.component_ports(name)
            with socket.socket() as sock, pytest.raises(OSError):
                sock.bind(("127.0.0.1", port))
            core = client.CoreV1Api(api)
            for pod in core.list_namespaced_pod(namespace).items:
                core.delete_namespaced_pod(pod.metadata.name, namespace, grace_period_seconds=0)
            wait_for(lambda: not core.list_namespaced_pod(namespace).items, timeout=30)
            # No ReplicaSet controller: the pods stay gone (the Deployment asks for one).
            time.sleep(3)
            assert not core.list_namespaced_pod(namespace).items
        finally:
            started = start_control_plane()
    assert started["started"] == [name]
    assert started["pids"][name] not in (None, old)
    assert embedded.component_pid(name) == started["pids"][name]
    with pointed_at(cluster):
        assert probes.embedded_control_plane_runs()
    # Started again, it makes the missing pod (a new one).
    assert wait_for(lambda: _ready_pods(api, namespace) - before)
    # A second start on a healthy cluster changes nothing.
    with pointed_at(cluster):
        again = start_control_plane()
    assert again["started"] == [] and again["pids"] == started["pids"]


def test_another_cluster_is_refused_in_one_line_and_nothing_is_touched(
    cluster: ClusterTarget, namespace: str, embedded: EmbeddedCluster, tmp_path: Path
) -> None:
    # The same API server through a kubeconfig outside the embedded clusters' directory: not
    # a cluster whose processes these actions may touch.
    other = tmp_path / "kubeconfig.yaml"
    shutil.copy(cluster.kubeconfig, other)
    pids = {name: embedded.component_pid(name) for name in COMPONENTS}
    with pointed_at(ClusterTarget(other)):
        for action in (
            lambda: restart_control_plane_component("kube-apiserver"),
            lambda: stop_control_plane_component("kube-controller-manager"),
            start_control_plane,
        ):
            with pytest.raises(ActivityFailed) as info:
                action()
            assert "need the embedded cluster" in str(info.value)
            assert "\n" not in str(info.value)
        assert probes.embedded_control_plane_runs() is False
    with pointed_at(cluster), pytest.raises(ActivityFailed, match="unknown control-plane"):
        restart_control_plane_component("kubelet")
    # `chaos run` on that cluster: the app's desired state holds, the control-plane probe
    # does not, so the hypothesis fails before the method and no drift is injected.
    deploy_webapp(cluster, load_webapp(), namespace)
    journal = chaos_run(
        ClusterTarget(other),
        "apiserver-restart-drift",
        tmp_path / "journal.json",
        WEBAPP_NAMESPACE=namespace,
    )
    before = journal["steady_states"]["before"]
    assert before["steady_state_met"] is False and journal["run"] == [], journal
    (probe,) = before["probes"]  # chaostoolkit stops at the first probe out of tolerance
    assert (probe["activity"]["name"], probe["output"]) == ("embedded-control-plane-runs", False)
    assert {name: embedded.component_pid(name) for name in COMPONENTS} == pids


def test_the_operator_heals_a_drift_right_after_an_etcd_restart_under_chaos_run(
    cluster: ClusterTarget, namespace: str, embedded: EmbeddedCluster, tmp_path: Path
) -> None:
    webapp = load_webapp()
    deploy_builtin(cluster, Operator(), webapp, namespace)
    old = embedded.component_pid("etcd")
    try:
        journal = chaos_run(
            cluster,
            "etcd-restart-drift",
            tmp_path / "journal.json",
            WEBAPP_NAMESPACE=namespace,
            WEBAPP_APPROACH="operator",
            WEBAPP_HEAL_WINDOW="30",
        )
        assert journal["status"] == "completed" and journal["deviated"] is False, journal
        restart, change, wait = journal["run"]
        assert restart["status"] == "succeeded", restart
        assert restart["output"]["oldPid"] == old != restart["output"]["newPid"]
        assert change["output"]["value"] == "myapp:chaos"
        assert wait["output"] is True  # the operator put the image back
        status = operator_status(cluster)
        assert status is not None and status.running
    finally:
        undeploy_builtin(cluster, Operator(), webapp, namespace)


def test_a_trial_whose_control_plane_fault_failed_is_an_error_not_a_verdict(
    cluster: ClusterTarget, embedded: EmbeddedCluster, tmp_path: Path
) -> None:
    doc = json.loads((EXPERIMENTS_DIR / "apiserver-restart-drift.json").read_text())
    doc["method"][0]["provider"]["arguments"]["component"] = "kubelet"  # no such component
    mine = tmp_path / "restart-nothing.json"
    mine.write_text(json.dumps(doc))
    pids = {name: embedded.component_pid(name) for name in COMPONENTS}
    out = tmp_path / "out"
    result = CliRunner().invoke(
        app,
        [
            *("run", "-e", str(mine), "--approach", "helm", "--heal-window", "2"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    (trial,) = load_results(latest_run(out)).trials
    # The drift was injected, but not after the restart the experiment describes.
    assert trial.status == "error", (trial.status, result.output)
    assert trial.error == (
        "'restart-kube-apiserver', before the injection, failed: ActivityFailed: unknown"
        " control-plane component 'kubelet' (known: etcd, kube-apiserver,"
        " kube-controller-manager, kube-scheduler, kwok-controller, lb-address-controller)"
    )
    assert result.exit_code == 1
    assert {name: embedded.component_pid(name) for name in COMPONENTS} == pids


def test_compare_run_on_another_cluster_leaves_the_control_plane_faults_out(
    cluster: ClusterTarget, embedded: EmbeddedCluster, tmp_path: Path
) -> None:
    other = tmp_path / "kubeconfig.yaml"
    shutil.copy(cluster.kubeconfig, other)
    pids = {name: embedded.component_pid(name) for name in COMPONENTS}
    out = tmp_path / "out"
    base = ["run", "--kubeconfig", str(other), "--output", str(out), "--approach", "helm"]
    # Only control-plane faults asked for: nothing to run, in one line, before any deploy.
    refused = CliRunner().invoke(
        app, [*base, "-e", "etcd-restart-drift", "-e", "controller-manager-down"]
    )
    assert refused.exit_code == 2, refused.output
    lines = [line for line in refused.output.splitlines() if line.strip()]
    assert len(lines) == 1, refused.output
    assert lines[0].startswith("error: nothing to run on this cluster: etcd-restart-drift needs")
    # With another fault beside them, the run goes on without them: they appear nowhere.
    done = CliRunner().invoke(
        app, [*base, "-e", "apiserver-restart-drift", "-e", "annotation-add", "--heal-window", "2"]
    )
    results = load_results(latest_run(out))
    assert done.exit_code == 0, done.output
    assert results.settings.experiments == ["annotation-add"]
    assert [e.name for e in results.experiments] == ["annotation-add"]
    assert [t.experiment for t in results.trials] == ["annotation-add"]
    assert {name: embedded.component_pid(name) for name in COMPONENTS} == pids
