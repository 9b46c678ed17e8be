"""The embedded cluster's LoadBalancer address controller (`compare.cluster.loadbalancer`), on
the real API server: a LoadBalancer Service gets an address of LB_RANGE within seconds and
keeps it (also across a restart of the controller, which kwokctl runs as a component); a
second one gets another; a deleted one, or one made a ClusterIP Service, frees its address;
a trial's health check names it when it is down, and a cluster made without it gets it at
`up` (one restart in one test: each start of the controller costs seconds). Its surviving an
API server restart is checked with that restart (tests/chaos/test_control_plane.py), Argo
CD's health of such a Service in tests/approaches/argocd."""

from __future__ import annotations

import ipaddress
import itertools
import time

import pytest
import yaml
from kubernetes import client

from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.cluster.embedded import LB_COMPONENT, LB_RANGE
from compare.cluster.loadbalancer import main
from compare.run.health import cluster_health
from tests.helpers import eventually, load_balancer_address

RESTARTED_S = 30.0


def _service(core: client.CoreV1Api, namespace: str, name: str) -> None:
    spec = {"type": "LoadBalancer", "selector": {"app": name}, "ports": [{"port": 80}]}
    core.create_namespaced_service(namespace, {"metadata": {"name": name}, "spec": spec})


def _address(api: client.ApiClient, namespace: str, name: str) -> str:
    found = client.CoreV1Api(api).read_namespaced_service(name, namespace)
    ingress = found.status.load_balancer.ingress or []
    return ",".join(i.ip for i in ingress)


@pytest.mark.cluster
def test_load_balancers_get_distinct_loopback_addresses_kept_until_freed(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    if not cluster.embedded:
        pytest.skip("runs only against the embedded cluster (KUBECONFIG was given)")
    core = client.CoreV1Api(api)
    started = time.monotonic()
    _service(core, namespace, "a")
    first = load_balancer_address(api, namespace, "a")
    assert time.monotonic() - started < 10
    _service(core, namespace, "b")
    second = load_balancer_address(api, namespace, "b")
    assert first != second
    assert {ipaddress.ip_address(ip) for ip in (first, second)} <= set(
        ipaddress.ip_network(LB_RANGE)
    )
    # Kept across the controller's restart (it reads what the Services hold) - here the one
    # of a cluster made before it existed, which `up` gives it.
    _made_without_the_controller(cluster, api)
    _service(core, namespace, "c")
    # A fresh Python process under a loaded machine takes seconds to import its client.
    third = load_balancer_address(api, namespace, "c", timeout=RESTARTED_S)
    assert (_address(api, namespace, "a"), _address(api, namespace, "b")) == (first, second)
    assert third not in (first, second)
    # Freed: deleted, or no LoadBalancer any more (its status no longer holds it).
    core.delete_namespaced_service("a", namespace)
    core.patch_namespaced_service("b", namespace, {"spec": {"type": "ClusterIP"}})
    eventually(lambda: _address(api, namespace, "b") == "", what="b's address cleared")
    # The next ones get the lowest addresses no Service holds (other tests' Services may be
    # going away meanwhile, so the lowest are read from the cluster), the freed ones among them.
    held = {i.ip for s in core.list_service_for_all_namespaces().items
            for i in (s.status.load_balancer.ingress or [])}  # fmt: skip
    assert not {first, second} & held
    hosts = (str(ip) for ip in ipaddress.ip_network(LB_RANGE).hosts())
    lowest = set(itertools.islice((ip for ip in hosts if ip not in held), 2))
    _service(core, namespace, "d")
    _service(core, namespace, "e")
    again = {load_balancer_address(api, namespace, n) for n in ("d", "e")}
    assert again == lowest


def _made_without_the_controller(cluster: ClusterTarget, api: client.ApiClient) -> None:
    """Stop the controller, leave the cluster's kwok.yaml and bin/ as an earlier toolkit did
    (no such component), and bring the cluster up: it runs again."""
    embedded = EmbeddedCluster(cluster_key(cluster))
    embedded.stop_component(LB_COMPONENT)
    # A trial's health check watches it as it does the other components.
    assert cluster_health(cluster, api)() == [f"{LB_COMPONENT} is not running"]
    path = embedded.cluster_dir / "kwok.yaml"
    documents = list(yaml.safe_load_all(path.read_text()))
    for doc in documents:
        if doc.get("kind") == "KwokctlConfiguration":
            doc["components"] = [c for c in doc["components"] if c["name"] != LB_COMPONENT]
    path.write_text(yaml.safe_dump_all(documents, sort_keys=False))
    (embedded.cluster_dir / "bin" / LB_COMPONENT).unlink()
    assert embedded.up().running
    assert embedded.component_pid(LB_COMPONENT) is not None
    assert cluster_health(cluster, api)() == []


def test_a_range_that_is_no_network_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--kubeconfig", "/nonexistent", "--range", "127.240.0.0/33"]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"{LB_COMPONENT}: --range: ") and err.count("\n") == 1
