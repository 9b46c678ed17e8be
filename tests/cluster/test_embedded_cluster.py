"""The embedded control plane behaves like Kubernetes: scheduling, ReplicaSets, GC, RBAC."""

from __future__ import annotations

import ipaddress
import socket
import time
from pathlib import Path

import pytest
from kubernetes import client
from kubernetes.utils import parse_quantity

from compare.chaos.control_plane import restore
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key, ports
from compare.cluster import embedded as embedded_module
from compare.cluster.embedded import (
    BIND_FAILURE,
    NODE_MAX_PODS,
    SERVICE_CIDR,
    control_plane_args,
)
from tests.helpers import eventually

pytestmark = pytest.mark.cluster


def make_deployment(name: str, replicas: int) -> client.V1Deployment:
    labels = {"app": name}
    return client.V1Deployment(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1DeploymentSpec(
            replicas=replicas,
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(
                    containers=[client.V1Container(name="app", image="myapp:v1")]
                ),
            ),
        ),
    )


def ready_pods(core: client.CoreV1Api, namespace: str, selector: str) -> list[client.V1Pod]:
    pods = core.list_namespaced_pod(namespace, label_selector=selector).items
    return [
        p
        for p in pods
        if p.metadata.deletion_timestamp is None
        and p.status.phase == "Running"
        and any(c.type == "Ready" and c.status == "True" for c in p.status.conditions or [])
    ]


def test_deployment_pods_become_ready_on_kwok_nodes(api: client.ApiClient, namespace: str) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    apps.create_namespaced_deployment(namespace, make_deployment("web", 3))
    pods = eventually(
        lambda: ready if len(ready := ready_pods(core, namespace, "app=web")) == 3 else None
    )
    kwok_nodes = {
        n.metadata.name
        for n in core.list_node().items
        if (n.metadata.annotations or {}).get("kwok.x-k8s.io/node") == "fake"
    }
    assert kwok_nodes, "the embedded cluster has no kwok nodes"
    assert {p.spec.node_name for p in pods} <= kwok_nodes
    dep = eventually(
        lambda: apps.read_namespaced_deployment("web", namespace).status.ready_replicas == 3
    )
    assert dep


def test_deleted_pod_is_replaced_by_a_new_pod(api: client.ApiClient, namespace: str) -> None:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    apps.create_namespaced_deployment(namespace, make_deployment("web", 2))
    eventually(lambda: len(ready_pods(core, namespace, "app=web")) == 2)
    before = {p.metadata.uid for p in ready_pods(core, namespace, "app=web")}
    victim = ready_pods(core, namespace, "app=web")[0]
    core.delete_namespaced_pod(victim.metadata.name, namespace, grace_period_seconds=0)

    def replaced() -> bool:
        now = ready_pods(core, namespace, "app=web")
        uids = {p.metadata.uid for p in now}
        return len(now) == 2 and victim.metadata.uid not in uids and bool(uids - before)

    eventually(replaced)


def test_deleting_an_owner_cascades_to_owned_objects(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    owner = core.create_namespaced_config_map(
        namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owner"))
    )
    ref = client.V1OwnerReference(
        api_version="v1", kind="ConfigMap", name="owner", uid=owner.metadata.uid
    )
    core.create_namespaced_config_map(
        namespace,
        client.V1ConfigMap(metadata=client.V1ObjectMeta(name="owned", owner_references=[ref])),
    )
    core.delete_namespaced_config_map("owner", namespace, propagation_policy="Background")

    def owned_gone() -> bool:
        try:
            core.read_namespaced_config_map("owned", namespace)
        except client.ApiException as exc:
            return exc.status == 404
        return False

    eventually(owned_gone, timeout=60)


def test_rbac_denies_a_service_account_without_rights(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name="nobody"))
    )
    # Impersonation goes through the real authorizer, exactly as a token would.
    impersonating = client.ApiClient(api.configuration)
    impersonating.set_default_header(
        "Impersonate-User", f"system:serviceaccount:{namespace}:nobody"
    )
    try:
        with pytest.raises(client.ApiException) as denied:
            client.CoreV1Api(impersonating).list_namespaced_secret(namespace)
        assert denied.value.status == 403
        auth = client.AuthorizationV1Api(api)
        review = auth.create_subject_access_review(
            client.V1SubjectAccessReview(
                spec=client.V1SubjectAccessReviewSpec(
                    user=f"system:serviceaccount:{namespace}:nobody",
                    resource_attributes=client.V1ResourceAttributes(
                        namespace=namespace, verb="list", resource="secrets"
                    ),
                )
            )
        )
        assert review.status.allowed is False
    finally:
        impersonating.close()


def kwok_nodes(core: client.CoreV1Api) -> list[client.V1Node]:
    return [
        n
        for n in core.list_node().items
        if (n.metadata.annotations or {}).get("kwok.x-k8s.io/node") == "fake"
    ]


def test_services_get_ips_from_a_slash16(api: client.ApiClient, namespace: str) -> None:
    cidr = client.NetworkingV1Api(api).read_service_cidr("kubernetes")
    assert cidr.spec.cidrs == [SERVICE_CIDR]
    network = ipaddress.ip_network(SERVICE_CIDR)
    assert network.num_addresses == 65536
    core = client.CoreV1Api(api)
    assert (
        ipaddress.ip_address(core.read_namespaced_service("kubernetes", "default").spec.cluster_ip)
        in network
    )
    # kube-apiserver's default range is a /24: an address past its 256 would be refused (422).
    wanted = str(network[40000 + int(time.time() * 1000) % 20000])
    svc = core.create_namespaced_service(
        namespace,
        client.V1Service(
            metadata=client.V1ObjectMeta(name="far"),
            spec=client.V1ServiceSpec(
                cluster_ip=wanted,
                selector={"app": "far"},
                ports=[client.V1ServicePort(port=80)],
            ),
        ),
    )
    assert svc.spec.cluster_ip == wanted
    allocated = core.create_namespaced_service(
        namespace,
        client.V1Service(
            metadata=client.V1ObjectMeta(name="near"),
            spec=client.V1ServiceSpec(
                selector={"app": "near"}, ports=[client.V1ServicePort(port=80)]
            ),
        ),
    )
    assert ipaddress.ip_address(allocated.spec.cluster_ip) in network


def test_a_kwok_node_runs_more_pods_than_the_kwok_default(
    api: client.ApiClient, namespace: str
) -> None:
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    nodes = kwok_nodes(core)
    assert nodes
    for node in nodes:
        assert parse_quantity(node.status.capacity["pods"]) == NODE_MAX_PODS
        assert parse_quantity(node.status.allocatable["pods"]) == NODE_MAX_PODS
    # kwok's node template allows 110 pods: 120 on one node need the raised capacity.
    target = nodes[0].metadata.name
    deployment = make_deployment("many", 120)
    deployment.spec.template.spec.node_selector = {"kubernetes.io/hostname": target}
    apps.create_namespaced_deployment(namespace, deployment)
    pods = eventually(
        lambda: ready if len(ready := ready_pods(core, namespace, "app=many")) == 120 else None,
        timeout=120,
    )
    assert {p.spec.node_name for p in pods} == {target}
    assert len({p.status.pod_ip for p in pods}) == 120


def running_flags(pid: int) -> dict[str, str]:
    """A process's `--flag=value` arguments as it parses them (the last one of a flag wins),
    and its environment as `env:NAME` entries."""
    argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
    flags = dict(a[2:].split("=", 1) for a in argv if a.startswith("--") and "=" in a)
    environ = Path(f"/proc/{pid}/environ").read_bytes().decode().split("\0")
    flags.update((f"env:{e.split('=', 1)[0]}", e.split("=", 1)[1]) for e in environ if "=" in e)
    return flags


def test_the_running_controllers_got_the_tuned_flags(cluster: ClusterTarget) -> None:
    """kube-controller-manager and kube-scheduler run with the tuning's client limits and
    workers, read from their own command lines (a flag kwokctl also set is overridden: the
    last value is the one the process parses), each component with the tuning's environment."""
    if not cluster.embedded:
        pytest.skip("runs only against the embedded cluster (KUBECONFIG was given)")
    embedded = EmbeddedCluster(cluster_key(cluster))
    wanted = control_plane_args()
    assert wanted, "the default tuning sets flags"

    def check() -> None:
        for component in {arg.component for arg in wanted}:
            pid = embedded.component_pid(component)
            assert pid is not None, f"{component} is not running"
            flags = running_flags(pid)
            for arg in wanted:
                if arg.component == component:
                    assert flags.get(arg.flag) == arg.value, (component, arg, flags.get(arg.flag))

    check()
    # A control-plane fault's restart (kwokctl start, from the cluster's kwok.yaml) keeps them.
    old = embedded.stop_component("kube-controller-manager", kill=True)
    restore(embedded)
    assert embedded.component_pid("kube-controller-manager") not in (None, old)
    check()


def test_a_component_that_does_not_run_is_named_with_its_logs_last_line(
    cluster: ClusterTarget,
) -> None:
    """What `cluster up` checks after kwokctl reports success (a component that lost its port
    to another cluster exits at once): every component runs, and one that does not is named
    with the last line of its log."""
    if not cluster.embedded:
        pytest.skip("runs only against the embedded cluster (KUBECONFIG was given)")
    embedded = EmbeddedCluster(cluster_key(cluster))
    assert embedded.dead_components() == []
    old = embedded.stop_component("kube-scheduler", kill=True)
    try:
        assert embedded.dead_components() == ["kube-scheduler"]
        assert embedded.log_tail("kube-scheduler") not in ("", "no log", "no output")
    finally:
        restore(embedded)
    assert embedded.component_pid("kube-scheduler") not in (None, old)
    assert embedded.dead_components() == []


def test_a_component_whose_port_is_taken_is_named_at_once(cluster: ClusterTarget) -> None:
    """What `cluster up` watches for while kwokctl creates a cluster (`lost_port`): a real
    component started on a port another process holds exits, and its log says so."""
    if not cluster.embedded:
        pytest.skip("runs only against the embedded cluster (KUBECONFIG was given)")
    embedded = EmbeddedCluster(cluster_key(cluster))
    assert embedded.lost_port() is None
    # Stopped, its ports are held by this process (`stop_component`); kwokctl's own start
    # (not `start_components`, which gives them back first) runs it into them.
    embedded.stop_component("kube-scheduler", kill=True)
    try:
        embedded._kwokctl("start", "cluster", timeout=60, check=False)
        lost = eventually(embedded.lost_port, timeout=20)
        assert lost is not None and lost.startswith("kube-scheduler exited at start: ")
        assert BIND_FAILURE in lost
    finally:
        restore(embedded)
    assert embedded.dead_components() == []


def test_a_cluster_whose_port_is_taken_at_creation_is_made_again_at_once(
    cluster: ClusterTarget, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A port the toolkit picked, taken by another program before etcd binds it: `cluster up`
    sees etcd exit while kwokctl still waits (which would take minutes), deletes what was made
    and creates the cluster once more on fresh ports."""
    if not cluster.embedded:
        pytest.skip("runs only against the embedded cluster (KUBECONFIG was given)")
    fresh = EmbeddedCluster(f"{cluster_key(cluster)[:30]}-taken")
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        taken = held.getsockname()[1]
        picks = iter([taken])  # the first pick: etcd's peer port (PORT_OPTIONS' order)
        real = ports.free_port
        monkeypatch.setattr(
            embedded_module,
            "free_port",
            lambda prefer=None, *, avoid=(): next(picks, None) or real(prefer, avoid=avoid),
        )
        downs: list[bool] = []
        delete = fresh.down

        def down() -> bool:
            downs.append(delete())
            return downs[-1]

        monkeypatch.setattr(fresh, "down", down)
        started = time.monotonic()
        try:
            status = fresh.up(nodes=1)
            took = time.monotonic() - started
            assert downs == [True]  # the first creation, deleted
            assert status.running and fresh.dead_components() == []
            assert taken not in fresh.component_ports("etcd")
            assert took < 60, took  # kwokctl alone waits up to its 5-minute timeout
        finally:
            fresh.down()
