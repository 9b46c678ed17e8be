"""Field paths: what an experiment's evidence tracks, read from live objects."""

from __future__ import annotations

import pytest

from compare.chaos.fields import parse_path, read_path
from compare.errors import CompareError

DEPLOYMENT = {
    "spec": {
        "replicas": 3,
        "template": {
            "metadata": {"labels": {"app.kubernetes.io/component": "web"}},
            "spec": {
                "containers": [
                    {"name": "webapp", "image": "myapp:v1", "env": [{"name": "A", "value": "1"}]},
                    {"name": "sidecar", "image": "busybox"},
                ]
            },
        },
    }
}
SERVICE = {"spec": {"ports": [{"name": "http", "port": 8080}], "selector": {"a": "b"}}}
# A headless Service's only port, unnamed: read by its index.
HEADLESS = {"spec": {"clusterIP": "None", "ports": [{"port": 7000}]}}
OBJECTS = {
    "deployment": DEPLOYMENT,
    "service": SERVICE,
    "statefulset": {"spec": {"replicas": 2}},
    "configmap": {"data": {"app.properties": "a=1"}},
    "pods": {"ready": 2},
}


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("deployment.spec.replicas", 3),
        ("deployment.spec.template.spec.containers[webapp].image", "myapp:v1"),
        ("deployment.spec.template.spec.containers[webapp].env", [{"name": "A", "value": "1"}]),
        ("deployment.spec.template.metadata.labels[app.kubernetes.io/component]", "web"),
        ("deployment.spec.template.spec.containers[*].name", ["webapp", "sidecar"]),
        ("service.spec.ports[http].port", 8080),
        ("service.spec.selector", {"a": "b"}),
        ("pods.ready", 2),
        ("statefulset.spec.replicas", 2),
        ("configmap.data[app.properties]", "a=1"),
        ("service.spec.ports[0].port", 8080),  # no port named `0`: the first
    ],
)
def test_reads_the_value_at_a_path(path: str, value: object) -> None:
    assert read_path(path, OBJECTS) == value


@pytest.mark.parametrize(
    "path",
    [
        "deployment.spec.template.spec.containers[nope].image",
        "deployment.status.readyReplicas",
        "replicaset.metadata.uid",
        "service.spec.ports[http].port.deeper",
    ],
)
def test_missing_parts_read_as_none(path: str) -> None:
    assert read_path(path, OBJECTS) is None


def test_an_unnamed_list_item_is_read_by_its_index() -> None:
    assert read_path("service.spec.ports[0].port", {"service": HEADLESS}) == 7000
    assert read_path("service.spec.ports[1].port", {"service": HEADLESS}) is None


def test_a_deleted_object_reads_as_none() -> None:
    assert read_path("service.spec.selector", {"service": None}) is None


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("spec.replicas", "must start with one of deployment, statefulset, daemonset, service"),
        ("deployment..spec", "cannot parse at '..spec'"),
        ("deployment.spec[", "cannot parse at '['"),
        (".deployment", "cannot parse"),
        ("", "must start with one of"),
    ],
)
def test_malformed_paths_fail_with_one_line(path: str, message: str) -> None:
    with pytest.raises(CompareError, match=r"field path .*: ") as info:
        parse_path(path)
    assert message in str(info.value)
    assert "\n" not in str(info.value)
