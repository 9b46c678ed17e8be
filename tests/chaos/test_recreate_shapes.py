"""`recreate_object` on Services of every shape a chart may have, against the API server: the
copy leaves out what the API server wrote or allocated (status - a LoadBalancer's address,
which the embedded cluster's address controller gives the copy anew -, clusterIP(s), node
ports, a health-check node port: `compare.judge.allow.without_allocated`) and is accepted,
plain or headless where a headless one exists (ClusterIP); a copy the API server refuses
leaves the original in place. The embedded cluster is single stack (IPv4, SERVICE_CIDR): a
Service asking `PreferDualStack` gets one family there, and its copy keeps what it asked for,
headless too; families the API server derived go where the patch redoes the allocation (an
ExternalName copy, which may have none)."""

from __future__ import annotations

from typing import Any

import pytest
from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare.chaos.actions import recreate_object
from compare.chaos.cluster import trial_secrets
from compare.cluster import ClusterTarget
from tests.helpers import load_balancer_address

pytestmark = pytest.mark.cluster
HEADLESS = {"spec": {"clusterIP": "None", "clusterIPs": ["None"]}}
# A patch that sets clusterIP alone: the original's clusterIPs left in would contradict it.
CLUSTER_IP_ONLY = {"spec": {"clusterIP": "None"}}
# A NodePort or LoadBalancer Service made a ClusterIP one: its node ports must not stay.
TO_CLUSTER_IP = {"spec": {"type": "ClusterIP", "externalTrafficPolicy": None,
                          "allocateLoadBalancerNodePorts": None}}  # fmt: skip
TO_EXTERNAL_NAME = {"spec": {"type": "ExternalName", "externalName": "elsewhere.example"}}
SHAPES: dict[str, dict[str, Any]] = {
    "cluster-ip": {},
    "headless": {"clusterIP": "None"},
    "dual-stack-preferred": {"ipFamilyPolicy": "PreferDualStack"},
    "node-port": {"type": "NodePort"},
    "load-balancer": {"type": "LoadBalancer", "externalTrafficPolicy": "Local"},
}


def test_a_copy_of_every_service_shape_is_accepted_with_its_own_allocations(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    secrets = trial_secrets(cluster)
    for name, shape in SHAPES.items():
        spec = {"selector": {"app": name}, "ports": [{"name": "http", "port": 80}], **shape}
        core.create_namespaced_service(namespace, {"metadata": {"name": name}, "spec": spec})
        balanced = shape.get("type") == "LoadBalancer"
        if balanced:
            load_balancer_address(api, namespace, name)
        old = core.read_namespaced_service(name, namespace)
        made = recreate_object("service", name, namespace, {"metadata": {"labels": {"c": "1"}}},
                               secrets=secrets)  # fmt: skip
        if balanced:
            load_balancer_address(api, namespace, name)  # the copy's own, given anew
        new = core.read_namespaced_service(name, namespace)
        assert made["uid"] == new.metadata.uid != old.metadata.uid, name
        assert new.metadata.labels == {"c": "1"}
        assert (new.spec.type, new.spec.ip_families) == (old.spec.type, ["IPv4"]), name
        assert new.spec.ip_family_policy == old.spec.ip_family_policy, name
        if old.spec.type in ("NodePort", "LoadBalancer"):
            assert new.spec.ports[0].node_port, name  # allocated anew
        if old.spec.health_check_node_port:
            assert new.spec.health_check_node_port, name
        if shape.get("type") in (None, "ClusterIP"):
            recreate_object("service", name, namespace, CLUSTER_IP_ONLY, secrets=secrets)
            headless = core.read_namespaced_service(name, namespace)
            assert headless.spec.cluster_ips == ["None"], name
            assert headless.spec.ip_family_policy == old.spec.ip_family_policy, name
        else:
            # What the planning skips (`skip-when`): the API server's own refusal.
            with pytest.raises(ActivityFailed, match="may not be set to 'None'"):
                recreate_object("service", name, namespace, HEADLESS, secrets=secrets)
            # Refused before anything was deleted: the Service is still the copy made above.
            assert core.read_namespaced_service(name, namespace).metadata.uid == made["uid"]
            recreate_object("service", name, namespace, TO_CLUSTER_IP, secrets=secrets)
            plain = core.read_namespaced_service(name, namespace)
            assert plain.spec.type == "ClusterIP" and plain.spec.ports[0].node_port is None
            assert plain.spec.health_check_node_port is None, name
    # Families the API server derived for a ClusterIP Service are refused on an ExternalName
    # one ("may not be set"): the copy leaves them out, its patch redoing the allocation.
    recreate_object("service", "cluster-ip", namespace, TO_EXTERNAL_NAME, secrets=secrets)
    external = core.read_namespaced_service("cluster-ip", namespace)
    assert (external.spec.type, external.spec.ip_families) == ("ExternalName", None)
