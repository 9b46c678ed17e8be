"""Pure drift detection: owned differences, foreign additions and the correcting patch."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from webapp_operator.builders import build_deployment, build_service, owner_reference
from webapp_operator.drift import correction_patch, foreign_additions, owned_differences

from .helpers import make_webapp

OWNER = owner_reference({"metadata": {"name": "shop", "uid": "u1"}})


def _deployment(**spec: Any) -> dict[str, Any]:
    return build_deployment(make_webapp(**spec), "ns", OWNER)


def _live(desired: dict[str, Any]) -> dict[str, Any]:
    """As read back from the API server: defaults filled in, bookkeeping added."""
    live = copy.deepcopy(desired)
    live["metadata"].update({"uid": "d1", "resourceVersion": "7", "generation": 1})
    spec = live["spec"]
    if live["kind"] == "Deployment":
        spec.update({"progressDeadlineSeconds": 600, "revisionHistoryLimit": 10})
        pod = spec["template"]["spec"]
        pod.update({"restartPolicy": "Always", "dnsPolicy": "ClusterFirst"})
        for container in pod["containers"]:
            container["terminationMessagePath"] = "/dev/termination-log"
            container["readinessProbe"]["httpGet"]["scheme"] = "HTTP"
    else:
        spec.update({"clusterIP": "10.0.0.7", "sessionAffinity": "None"})
    live["status"] = {}
    return live


def _container(obj: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = obj["spec"]["template"]["spec"]["containers"][0]
    return found


def test_server_defaults_are_not_drift() -> None:
    desired = _deployment(env=[{"name": "A", "value": "1"}])
    assert owned_differences(desired, _live(desired)) == []
    service = build_service(make_webapp(), "ns", OWNER)
    assert owned_differences(service, _live(service)) == []


def test_changed_owned_fields_are_named() -> None:
    desired = _deployment(replicas=3, env=[{"name": "A", "value": "1"}])
    live = _live(desired)
    live["spec"]["replicas"] = 1
    _container(live)["image"] = "evil:v2"
    _container(live)["env"][0]["value"] = "2"
    live["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"] = "x"
    assert owned_differences(desired, live) == [
        "spec.replicas",
        "spec.template.metadata.labels.app.kubernetes.io/component",
        "spec.template.spec.containers[webapp].image",
        "spec.template.spec.containers[webapp].env[A].value",
    ]


def test_missing_fields_and_reordered_items_are_drift() -> None:
    desired = _deployment(env=[{"name": "A", "value": "1"}, {"name": "B", "value": "2"}])
    live = _live(desired)
    env = _container(live)["env"]
    env.reverse()
    del _container(live)["securityContext"]
    assert owned_differences(desired, live) == [
        "spec.template.spec.containers[webapp].securityContext",
        "spec.template.spec.containers[webapp].env(order)",
    ]


def test_quantities_compare_by_value() -> None:
    desired = _deployment(resources={"requests": {"cpu": "0.5", "memory": "1024Mi"}})
    live = _live(desired)
    _container(live)["resources"]["requests"] = {"cpu": "500m", "memory": "1Gi"}
    assert owned_differences(desired, live) == []
    _container(live)["resources"]["requests"]["cpu"] = "250m"
    assert owned_differences(desired, live) == [
        "spec.template.spec.containers[webapp].resources.requests.cpu"
    ]


def test_nothing_foreign_in_a_clean_object() -> None:
    desired = _deployment(env=[{"name": "A", "value": "1"}])
    assert foreign_additions(desired, _live(desired)) == []
    assert correction_patch(desired, _live(desired)) == []


def test_foreign_env_container_label_and_volume() -> None:
    desired = _deployment(env=[{"name": "A", "value": "1"}])
    live = _live(desired)
    _container(live)["env"].append({"name": "EXTRA", "value": "x"})
    pod = live["spec"]["template"]["spec"]
    pod["containers"].append({"name": "sidecar", "image": "proxy:1"})
    pod["initContainers"] = [{"name": "init", "image": "busybox"}]
    pod["volumes"].append({"name": "cache", "emptyDir": {}})
    live["spec"]["template"]["metadata"]["labels"]["team"] = "blue"
    fields = [entry.field for entry in foreign_additions(desired, live)]
    assert fields == [
        "spec.template.metadata.labels[team]",
        "spec.template.spec.containers[sidecar]",
        "spec.template.spec.containers[webapp].env[EXTRA]",
        "spec.template.spec.initContainers[init]",
        "spec.template.spec.volumes[cache]",
    ]


def _apply_json_patch(obj: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """A minimal RFC 6902 applier for test/replace/remove on object paths."""
    doc = copy.deepcopy(obj)
    for op in ops:
        *parents, last = op["path"].lstrip("/").split("/")
        node: Any = doc
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        key: Any = int(last) if isinstance(node, list) else last
        if op["op"] == "test":
            assert node[key] == op["value"], f"test failed at {op['path']}"
        elif op["op"] == "replace":
            node[key] = op["value"]
        elif op["op"] == "remove":
            del node[key]
    return doc


def test_correction_patch_keeps_server_defaults_and_removes_only_foreign() -> None:
    desired = _deployment(env=[{"name": "A", "value": "1"}])
    live = _live(desired)
    _container(live)["env"].append({"name": "EXTRA", "value": "x"})
    live["spec"]["template"]["spec"]["containers"].append({"name": "sidecar", "image": "p"})
    live["spec"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "b"}]
    live["spec"]["template"]["metadata"]["labels"]["team"] = "blue"
    ops = correction_patch(desired, live)
    assert ops[0] == {"op": "test", "path": "/spec/template", "value": live["spec"]["template"]}
    fixed = _apply_json_patch(live, ops)
    assert foreign_additions(desired, fixed) == []
    assert owned_differences(desired, fixed) == []
    # Server defaults inside the kept container survive the rewrite.
    assert _container(fixed)["terminationMessagePath"] == "/dev/termination-log"
    assert fixed["spec"]["template"]["spec"]["restartPolicy"] == "Always"


def test_edited_container_port_is_replaced_not_duplicated() -> None:
    # Server-side apply keys container ports by number: an edited port is a foreign entry, and
    # applying alongside it would leave two ports named "http" (rejected by validation).
    desired = _deployment(port=8080)
    live = _live(desired)
    _container(live)["ports"][0]["containerPort"] = 9090
    assert [e.field for e in foreign_additions(desired, live)] == [
        "spec.template.spec.containers[webapp].ports[9090]"
    ]
    fixed = _apply_json_patch(live, correction_patch(desired, live))
    assert _container(fixed)["ports"] == _container(desired)["ports"]


def test_service_ports_and_selector() -> None:
    desired = build_service(make_webapp(port=8080), "ns", OWNER)
    live = _live(desired)
    live["spec"]["ports"][0]["port"] = 9090
    live["spec"]["selector"]["extra"] = "x"
    assert [e.field for e in foreign_additions(desired, live)] == [
        "spec.ports[9090]",
        "spec.selector[extra]",
    ]
    fixed = _apply_json_patch(live, correction_patch(desired, live))
    assert fixed["spec"]["ports"] == desired["spec"]["ports"]
    assert fixed["spec"]["selector"] == desired["spec"]["selector"]
    assert fixed["spec"]["clusterIP"] == "10.0.0.7"


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="ConfigMap"):
        foreign_additions({"kind": "ConfigMap"}, {})
