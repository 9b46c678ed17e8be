"""`compare.judge.pods`: what pod creation adds is allowed only where the template leaves the
field unset; each rule of SYSTEM_ADDED has a case, and a change beyond it is drift."""

from __future__ import annotations

import copy
from typing import Any

from compare.judge.pods import SA_MOUNT, SYSTEM_ADDED, as_made_from, pod_mismatches

TEMPLATE: dict[str, Any] = {
    "metadata": {"labels": {"app": "db"}},
    "spec": {
        "containers": [
            {
                "name": "db",
                "image": "db:1",
                "ports": [{"containerPort": 5432, "protocol": "TCP"}],
                "resources": {"limits": {"cpu": "1"}},
            }
        ],
        "restartPolicy": "Always",
    },
}
_version = iter(range(1, 10_000))


def _pod(owner_kind: str, **spec: Any) -> dict[str, Any]:
    body = copy.deepcopy(TEMPLATE)
    body["metadata"].update(name="db-0", uid="pod-1", resourceVersion=str(next(_version)))
    body["metadata"]["labels"].update(
        {"controller-revision-hash": "db-abc", "statefulset.kubernetes.io/pod-name": "db-0"}
    )
    c = body["spec"]["containers"][0]
    c["resources"]["requests"] = {"cpu": "1"}  # pod defaulting: requests from limits
    c["volumeMounts"] = [{"name": "kube-api-access-q", "mountPath": SA_MOUNT}]
    body["spec"].update(
        nodeName="node-1",
        serviceAccountName="default",
        serviceAccount="default",
        enableServiceLinks=True,
        priority=0,
        volumes=[{"name": "kube-api-access-q", "projected": {}}],
        tolerations=[{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}],
    )
    if owner_kind == "StatefulSet":
        body["spec"].update(hostname="db-0", subdomain="db")
        body["spec"]["volumes"].append(
            {"name": "data", "persistentVolumeClaim": {"claimName": "x"}}
        )
    if owner_kind == "DaemonSet":
        pin = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
        body["spec"]["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [pin]}}
        }  # fmt: skip
    body["spec"].update(spec)
    return body


def _owner(kind: str) -> dict[str, Any]:
    return {"kind": kind, "metadata": {"uid": f"{kind}-1", "resourceVersion": "1"}}


def test_every_system_added_rule_has_its_reason() -> None:
    assert all(field and reason for field, reason in SYSTEM_ADDED)


def test_what_pod_creation_adds_is_allowed_for_each_owner_kind() -> None:
    for kind in ("StatefulSet", "DaemonSet", "ReplicaSet"):
        assert pod_mismatches(_pod(kind), TEMPLATE, _owner(kind)) == [], kind


def test_a_field_the_template_sets_is_judged_even_if_the_system_could_add_it() -> None:
    template = copy.deepcopy(TEMPLATE)
    template["spec"]["nodeName"] = "node-2"
    found = [str(m) for m in pod_mismatches(_pod("ReplicaSet"), template, _owner("ReplicaSet"))]
    assert found == ["pod[db-0].spec.nodeName: want 'node-2', got 'node-1'"]


def test_a_change_beyond_what_creation_adds_is_drift() -> None:
    cases = {
        "hostname": _pod("ReplicaSet", hostname="x"),  # only a StatefulSet's pods get one
        "volumes": _pod("ReplicaSet", volumes=[{"name": "data", "hostPath": {"path": "/"}}]),
        "activeDeadlineSeconds": _pod("StatefulSet", activeDeadlineSeconds=5),
    }
    for field, body in cases.items():
        found = pod_mismatches(body, TEMPLATE, _owner("ReplicaSet"))
        assert f"pod[db-0].spec.{field}" in [m.path for m in found], (field, found)
    changed = _pod("StatefulSet")
    changed["spec"]["containers"][0]["resources"]["limits"]["cpu"] = "2"  # an in-place resize
    paths = [m.path for m in pod_mismatches(changed, TEMPLATE, _owner("StatefulSet"))]
    assert paths == ["pod[db-0].spec.containers[db].resources.limits.cpu"]


def test_host_network_pods_get_their_container_port_as_host_port() -> None:
    template = copy.deepcopy(TEMPLATE)
    template["spec"]["hostNetwork"] = True
    body = _pod("DaemonSet", hostNetwork=True)
    body["spec"]["containers"][0]["ports"][0]["hostPort"] = 5432
    assert as_made_from(body, template["spec"], template["metadata"], "DaemonSet")["spec"][
        "containers"
    ][0]["ports"] == [{"containerPort": 5432, "protocol": "TCP"}]
    body["spec"]["containers"][0]["ports"][0]["hostPort"] = 80  # not the default: drift
    found = pod_mismatches(body, template, _owner("DaemonSet"))
    assert [m.path for m in found] == ["pod[db-0].spec.containers[db].ports[5432].hostPort"]
