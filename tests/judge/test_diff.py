"""The closed-world judge on one object: every class of drift is seen, each allowed change is not.

The desired objects are the operator's real builders' output (as the API would return them);
each case changes a copy the way a fault (or a legitimate actor) would and checks the verdict.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from compare.judge import ALLOW_LIST, diff_object, judged_field
from compare.judge.diff import Mismatch
from tests.run.builders import DEPLOYMENT, SERVICE, deployment, service

Obj = dict[str, Any]


def _container(obj: Obj) -> Obj:
    found: Obj = obj["spec"]["template"]["spec"]["containers"][0]
    return found


def _pod_spec(obj: Obj) -> Obj:
    found: Obj = obj["spec"]["template"]["spec"]
    return found


def _dep_drift(change: Callable[[Obj], None]) -> list[Mismatch]:
    live = deployment()
    change(live)
    return diff_object("deployment", DEPLOYMENT, live)


def _svc_drift(change: Callable[[Obj], None]) -> list[Mismatch]:
    live = service()
    change(live)
    return diff_object("service", SERVICE, live)


C = "deployment.spec.template.spec.containers[webapp]"

DRIFTS: list[Any] = [
    # A value the chart/operator sets, changed.
    pytest.param(lambda d: _container(d).update(image="x:2"), f"{C}.image", "changed", id="image"),
    pytest.param(
        lambda d: d["spec"].update(replicas=1), "deployment.spec.replicas", "changed", id="replicas"
    ),
    pytest.param(
        lambda d: _container(d)["readinessProbe"].update(periodSeconds=30),
        f"{C}.readinessProbe.periodSeconds",
        "changed",
        id="probe-value",
    ),
    pytest.param(
        lambda d: _container(d)["securityContext"].update(runAsUser=0),
        f"{C}.securityContext.runAsUser",
        "added",
        id="run-as-root",
    ),
    # A field that is set, removed.
    pytest.param(
        lambda d: _container(d).pop("livenessProbe"),
        f"{C}.livenessProbe",
        "removed",
        id="probe-removed",
    ),
    pytest.param(
        lambda d: d["metadata"]["labels"].pop("app.kubernetes.io/component"),
        "deployment.metadata.labels[app.kubernetes.io/component]",
        "removed",
        id="label-removed",
    ),
    # A field added to the pod spec.
    pytest.param(
        lambda d: _pod_spec(d).update(hostNetwork=True),
        "deployment.spec.template.spec.hostNetwork",
        "added",
        id="host-network",
    ),
    pytest.param(
        lambda d: _pod_spec(d)["volumes"].append({"name": "x", "emptyDir": {}}),
        "deployment.spec.template.spec.volumes[x]",
        "added",
        id="volume-added",
    ),
    pytest.param(
        lambda d: _pod_spec(d).update(nodeSelector={"disk": "ssd"}),
        "deployment.spec.template.spec.nodeSelector",
        "added",
        id="node-selector",
    ),
    pytest.param(
        lambda d: _pod_spec(d).update(serviceAccountName="admin"),
        "deployment.spec.template.spec.serviceAccountName",
        "added",
        id="sa",
    ),
    # A field added to a container, or a container added.
    pytest.param(
        lambda d: _container(d).update(command=["sh"]), f"{C}.command", "added", id="command"
    ),
    pytest.param(
        lambda d: _container(d)["securityContext"]["capabilities"].update(add=["NET_ADMIN"]),
        f"{C}.securityContext.capabilities.add",
        "added",
        id="capability",
    ),
    pytest.param(
        lambda d: _container(d).update(env=[{"name": "DEBUG", "value": "1"}]),
        f"{C}.env",
        "added",
        id="env-added",
    ),
    pytest.param(
        lambda d: _pod_spec(d)["containers"].append({"name": "side", "image": "s:1"}),
        "deployment.spec.template.spec.containers[side]",
        "added",
        id="sidecar",
    ),
    # Foreign content inside an owned item.
    pytest.param(
        lambda d: _container(d)["readinessProbe"].update(httpGet=None, tcpSocket={"port": "http"}),
        f"{C}.readinessProbe.httpGet",
        "removed",
        id="probe-handler-swapped",
    ),
    pytest.param(
        lambda d: _pod_spec(d)["volumes"][0].update(emptyDir=None, hostPath={"path": "/"}),
        "deployment.spec.template.spec.volumes[tmp].hostPath",
        "added",
        id="hostpath",
    ),
    # A Deployment-level field.
    pytest.param(
        lambda d: d["spec"].update(paused=True), "deployment.spec.paused", "added", id="paused"
    ),
    pytest.param(
        lambda d: d["spec"].update(minReadySeconds=5),
        "deployment.spec.minReadySeconds",
        "added",
        id="min-ready",
    ),
    pytest.param(
        lambda d: d["spec"].update(strategy={"type": "Recreate"}),
        "deployment.spec.strategy",
        "added",
        id="strategy",
    ),
    # An object label added.
    pytest.param(
        lambda d: d["metadata"]["labels"].update(team="x"),
        "deployment.metadata.labels.team",
        "added",
        id="label-added",
    ),
    # A pod-template label changed.
    pytest.param(
        lambda d: d["spec"]["template"]["metadata"]["labels"].update(
            {"app.kubernetes.io/component": "x"}
        ),
        "deployment.spec.template.metadata.labels[app.kubernetes.io/component]",
        "changed",
        id="template-label",
    ),
]


SERVICE_DRIFTS: list[Any] = [
    pytest.param(
        lambda s: s["spec"].update(sessionAffinity="ClientIP"),
        "service.spec.sessionAffinity",
        "added",
        id="session-affinity",
    ),
    pytest.param(
        lambda s: s["spec"].update(externalIPs=["1.2.3.4"]),
        "service.spec.externalIPs",
        "added",
        id="external-ips",
    ),
    pytest.param(
        lambda s: s["spec"]["ports"][0].update(port=9999),
        "service.spec.ports[http].port",
        "changed",
        id="port",
    ),
    pytest.param(
        lambda s: s["spec"].update(selector={"x": "y"}),
        "service.spec.selector[app.kubernetes.io/name]",
        "removed",
        id="selector",
    ),
    pytest.param(
        lambda s: s["spec"].update(type="NodePort"), "service.spec.type", "changed", id="type"
    ),
    pytest.param(
        lambda s: s["metadata"]["labels"].pop("app.kubernetes.io/name"),
        "service.metadata.labels[app.kubernetes.io/name]",
        "removed",
        id="label-removed",
    ),
]


CASES = [
    *(pytest.param(_dep_drift, *p.values, id=f"deployment-{p.id}") for p in DRIFTS),
    *(pytest.param(_svc_drift, *p.values, id=f"service-{p.id}") for p in SERVICE_DRIFTS),
]


@pytest.mark.parametrize(("drift", "change", "path", "kind"), CASES)
def test_every_class_of_drift_is_seen(
    drift: Callable[[Callable[[Obj], None]], list[Mismatch]],
    change: Callable[[Obj], None],
    path: str,
    kind: str,
) -> None:
    found = drift(change)
    assert (path, kind) in [(m.path, m.change) for m in found], found


ALLOWED: list[Any] = [
    pytest.param(lambda d: d["metadata"].update(annotations={"note": "x"}), id="annotation"),
    pytest.param(
        lambda d: d["spec"]["template"]["metadata"].update(
            annotations={"kubectl.kubernetes.io/restartedAt": "2026-12-03T00:00:00Z"}
        ),
        id="rollout-restart",
    ),
    pytest.param(
        lambda d: d["metadata"].update(
            managedFields=[{"manager": "x"}],
            resourceVersion="99",
            generation=7,
            ownerReferences=[],
            finalizers=["x"],
            creationTimestamp="2026-01-01T00:00:00Z",
        ),
        id="server-metadata",
    ),
    pytest.param(lambda d: d.update(status={"readyReplicas": 0}), id="status"),
]


@pytest.mark.parametrize("change", ALLOWED)
def test_allowed_changes_are_not_drift(change: Callable[[Obj], None]) -> None:
    assert _dep_drift(change) == []


def test_server_allocated_service_fields_are_allowed_unless_desired_sets_them() -> None:
    live = service()
    live["spec"].update(clusterIP="10.96.0.99", clusterIPs=["10.96.0.99"])
    assert diff_object("service", SERVICE, live) == []
    node_port = copy.deepcopy(SERVICE)
    node_port["spec"]["type"] = "NodePort"
    live["spec"]["type"] = "NodePort"
    live["spec"]["ports"][0]["nodePort"] = 30001
    assert diff_object("service", node_port, live) == []
    headless = copy.deepcopy(SERVICE)
    headless["spec"]["clusterIP"] = "None"
    found = diff_object("service", headless, service())
    assert [(m.path, m.change) for m in found] == [("service.spec.clusterIP", "changed")]


def _allocated(**spec: Any) -> list[str]:
    live = service()
    live["spec"].update(clusterIP="10.96.0.99", clusterIPs=["10.96.0.99"])
    for key, value in spec.items():
        if key == "nodePort":
            live["spec"]["ports"][0]["nodePort"] = value
        else:
            live["spec"][key] = value
    return [str(m) for m in diff_object("service", SERVICE, live)]


# Each allow-list entry, given a value that changes what the object does: drift all the same.
ALLOCATED_DRIFT = [
    pytest.param(
        {"clusterIP": "None", "clusterIPs": ["None"]},
        [
            "service.spec.clusterIP: want an IP address the API server allocates, got 'None'",
            "service.spec.clusterIPs: want the IP addresses the API server allocates, clusterIP"
            " first, got ['None']",
        ],
        id="headless-clusterIP",
    ),
    pytest.param(
        {"clusterIPs": ["fd00::9", "10.96.0.99"]},
        [
            "service.spec.clusterIPs: want the IP addresses the API server allocates, clusterIP"
            " first, got ['fd00::9', '10.96.0.99']"
        ],
        id="clusterIPs-not-led-by-clusterIP",
    ),
    pytest.param(
        {"nodePort": 30001},
        [
            "service.spec.ports[http].nodePort: want none: the desired Service is ClusterIP,"
            " got 30001"
        ],
        id="nodePort-on-a-ClusterIP-Service",
    ),
    pytest.param(
        {"healthCheckNodePort": 30002},
        [
            "service.spec.healthCheckNodePort: want none: only a LoadBalancer with"
            " externalTrafficPolicy Local has one, got 30002"
        ],
        id="healthCheckNodePort-without-Local",
    ),
    pytest.param(
        {"ipFamilyPolicy": "PreferDualStack"},
        ["service.spec.ipFamilyPolicy: added 'PreferDualStack'"],
        id="ipFamilyPolicy",
    ),
]


@pytest.mark.parametrize(("spec", "want"), ALLOCATED_DRIFT)
def test_an_allocated_field_is_allowed_only_as_an_allocation(
    spec: dict[str, Any], want: list[str]
) -> None:
    assert _allocated(**spec) == want


def test_an_allowed_annotation_map_still_judges_the_deployers_keys() -> None:
    # Both open maps: someone else's key is allowed, the deployer's own changed is drift.
    for path in (("metadata",), ("spec", "template", "metadata")):
        desired = copy.deepcopy(DEPLOYMENT)
        live = deployment()
        node_d, node_l = desired, live
        for key in path:
            node_d, node_l = node_d[key], node_l[key]
        node_d["annotations"] = {"owner/config-hash": "abc"}
        node_l["annotations"] = {"owner/config-hash": "abc", "kubectl.kubernetes.io/x": "1"}
        assert diff_object("deployment", desired, live) == []
        node_l["annotations"]["owner/config-hash"] = "other"
        assert [m.change for m in diff_object("deployment", desired, live)] == ["changed"]
        # An annotation the API server added to the defaulted object (not in the raw one)
        # is the server's: it may change.
        assert diff_object("deployment", desired, live, raw=DEPLOYMENT) == []


def test_an_owned_annotation_is_judged_but_others_may_be_added() -> None:
    desired = copy.deepcopy(DEPLOYMENT)
    desired["metadata"]["annotations"] = {"owner/checksum": "abc"}
    live = deployment()
    live["metadata"]["annotations"] = {"owner/checksum": "abc", "foreign": "1"}
    assert diff_object("deployment", desired, live) == []
    live["metadata"]["annotations"]["owner/checksum"] = "zzz"
    assert [str(m) for m in diff_object("deployment", desired, live)] == [
        "deployment.metadata.annotations[owner/checksum]: want 'abc', got 'zzz'"
    ]


def test_a_missing_object_is_one_mismatch() -> None:
    assert [str(m) for m in diff_object("service", SERVICE, None)] == ["service: missing"]


def test_absent_null_and_empty_are_the_same() -> None:
    live = deployment()
    _container(live)["args"] = []
    _pod_spec(live)["tolerations"] = None
    assert diff_object("deployment", DEPLOYMENT, live) == []


def test_a_reordered_list_of_named_items_is_drift() -> None:
    desired = copy.deepcopy(DEPLOYMENT)
    _container(desired)["env"] = [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]
    live = deployment()
    _container(live)["env"] = [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]
    assert [m.path for m in diff_object("deployment", desired, live)] == [f"{C}.env"]


def test_messages_name_the_item_and_the_values() -> None:
    found = _dep_drift(lambda d: _container(d).update(image="x:2"))
    assert [str(m) for m in found] == [f"{C}.image: want 'shop:v1', got 'x:2'"]


def test_every_allow_list_entry_has_a_reason() -> None:
    assert ALLOW_LIST
    for entry in ALLOW_LIST:
        assert entry.reason and entry.path and entry.rule in ("allocated", "open-map")


@pytest.mark.parametrize(
    ("obj", "path", "judged"),
    [
        (DEPLOYMENT, "spec.template.spec.containers.webapp.image", True),
        (DEPLOYMENT, "spec.paused", True),
        (DEPLOYMENT, "metadata.labels.team", True),
        (DEPLOYMENT, "metadata.annotations.note", False),
        (DEPLOYMENT, "spec.template.metadata.annotations.note", False),
        (DEPLOYMENT, "metadata.uid", False),
        (DEPLOYMENT, "status.readyReplicas", False),
        (SERVICE, "spec.clusterIP", False),
        (SERVICE, "spec.sessionAffinity", True),
    ],
)
def test_judged_field_follows_the_allow_list(obj: Obj, path: str, judged: bool) -> None:
    assert judged_field(obj, path.split(".")) is judged
