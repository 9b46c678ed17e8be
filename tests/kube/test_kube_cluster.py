"""`compare.kube` against the embedded real cluster: namespaces, server-side apply by
discovery, and waits on real objects (no mocked API)."""

from __future__ import annotations

import threading
import uuid

import pytest
from kubernetes import client

from compare.errors import EXIT_FAILED, CompareError
from compare.kube import (
    WaitCancelled,
    delete_namespace,
    ensure_namespace,
    served,
    wait_for,
    wait_until_gone,
)

pytestmark = pytest.mark.cluster


def _config_map(name: str, value: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name},
        "data": {"k": value},
    }


def test_ensure_namespace_creates_once(api: client.ApiClient) -> None:
    name = f"t-kube-ns-{uuid.uuid4().hex[:6]}"
    try:
        assert ensure_namespace(api, name, labels={"purpose": "kube-test"}) is True
        assert ensure_namespace(api, name) is False
        live = client.CoreV1Api(api).read_namespace(name)
        assert live.metadata.labels["purpose"] == "kube-test"
        with pytest.raises(client.ApiException) as raised:
            ensure_namespace(api, name, exists_ok=False)
        assert raised.value.status == 409
    finally:
        assert delete_namespace(api, name, timeout=60.0) is True
    with pytest.raises(client.ApiException) as gone:
        client.CoreV1Api(api).read_namespace(name)
    assert gone.value.status == 404
    assert delete_namespace(api, name) is False


def test_a_refused_namespace_is_one_line(api: client.ApiClient) -> None:
    with pytest.raises(CompareError, match=r"^creating namespace Bad_NS: .*") as raised:
        ensure_namespace(api, "Bad_NS")
    assert raised.value.exit_code == EXIT_FAILED
    assert "\n" not in str(raised.value)


def test_apply_by_discovery_then_wait_until_gone(api: client.ApiClient, namespace: str) -> None:
    kind = served.served(api, "v1", "ConfigMap")
    assert kind is not None and kind.plural == "configmaps" and kind.namespaced
    stored = served.apply(api, kind, namespace, _config_map("cm", "one"), field_manager="kube-test")
    assert stored["data"] == {"k": "one"}
    managers = [m["manager"] for m in stored["metadata"]["managedFields"]]
    assert managers == ["kube-test"]
    again = served.apply(api, kind, namespace, _config_map("cm", "two"), field_manager="kube-test")
    assert again["data"] == {"k": "two"}
    assert served.read(api, kind, namespace, "cm") is not None
    assert served.delete(api, kind, namespace, "cm") is True
    wait_until_gone(
        lambda: ["ConfigMap cm"] if served.read(api, kind, namespace, "cm") else [],
        deadline=30.0,
        timed_out=lambda still: CompareError(f"{still} still present"),
    )
    assert served.delete(api, kind, namespace, "cm") is False


def test_wait_for_sees_an_object_made_meanwhile(api: client.ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    maker = threading.Timer(
        0.3,
        lambda: core.create_namespaced_config_map(
            namespace, client.V1ConfigMap(metadata=client.V1ObjectMeta(name="late"))
        ),
    )
    maker.start()
    kind = served.served(api, "v1", "ConfigMap")
    assert kind is not None
    found = wait_for(
        lambda: served.read(api, kind, namespace, "late"),
        deadline=30.0,
        timed_out=lambda _: CompareError("ConfigMap late never came"),
    )
    maker.join(timeout=30)
    assert found is not None and found["metadata"]["name"] == "late"


def test_a_wait_that_times_out_names_what_was_missing(
    api: client.ApiClient, namespace: str
) -> None:
    kind = served.served(api, "v1", "ConfigMap")
    assert kind is not None
    with pytest.raises(CompareError, match=r"^ConfigMap absent not there within 1s$"):
        wait_for(
            lambda: served.read(api, kind, namespace, "absent"),
            deadline=0.5,
            timed_out=lambda _: CompareError("ConfigMap absent not there within 1s"),
        )
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(WaitCancelled, match="cancelled"):
        wait_for(
            lambda: served.read(api, kind, namespace, "absent"),
            deadline=30.0,
            timed_out=lambda _: AssertionError(),
            cancel=cancel,
            what="ConfigMap absent",
        )


def test_documents_are_applied_in_order_and_deleted_until_gone(
    api: client.ApiClient, namespace: str
) -> None:
    role = f"t-kube-{uuid.uuid4().hex[:6]}"
    docs: list[dict[str, object]] = [
        _config_map("first", "1"),
        {**_config_map("second", "2"), "metadata": {"name": "second", "namespace": namespace}},
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {"name": role},
            "rules": [],
        },
    ]
    stored = served.apply_all(api, docs, field_manager="kube-test", namespace=namespace)
    assert [s["metadata"].get("namespace") for s in stored] == [namespace, namespace, None]
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    assert core.read_namespaced_config_map("first", namespace).data == {"k": "1"}
    try:
        served.delete_all(
            api, [*docs, _config_map("never-made", "x")], timeout=30.0, namespace=namespace
        )
        assert (
            core.list_namespaced_config_map(namespace, field_selector="metadata.name=first").items
            == []
        )
        with pytest.raises(client.ApiException) as gone:
            rbac.read_cluster_role(role)
        assert gone.value.status == 404
    finally:
        served.delete_all(api, docs[2:], timeout=30.0)


def test_a_document_of_a_kind_not_served_is_one_line(api: client.ApiClient, namespace: str) -> None:
    unknown = {"apiVersion": "example.invalid/v1", "kind": "Nothing", "metadata": {"name": "x"}}
    with pytest.raises(CompareError) as raised:
        served.apply_all(api, [_config_map("before", "1"), unknown], namespace=namespace)
    assert str(raised.value) == "applying Nothing x: no API serves Nothing (example.invalid/v1)"
    # What came before it stays applied.
    assert client.CoreV1Api(api).read_namespaced_config_map("before", namespace).data == {"k": "1"}
