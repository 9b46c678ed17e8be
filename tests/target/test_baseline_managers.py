"""A target operator's baseline on the real API server, with other field managers' writes made
before it: a foreign label is reported (object, field, manager) and the baseline stands; a
foreign spec field refuses the baseline with one line. The API server keeps managedFields
itself: the test plays an operator that leaves foreign changes alone (it creates the owned
Deployment under its own field manager, with an owner reference to the object standing in for
its custom resource) and makes each foreign change through the kubernetes client under the
manager name `kubectl label` / `kubectl patch` use. (The toolkit's own operator would revert
both before any baseline: it corrects every field it sets and removes the rest.)"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from compare.approaches import load_target
from compare.approaches.operator import baseline
from compare.approaches.operator.arm import take_baseline
from compare.errors import CompareError
from compare.target import Target

from .operator_targets import shop_target

pytestmark = pytest.mark.cluster

OPERATOR = "shop-operator"


def _deployment(owner: dict[str, Any]) -> dict[str, Any]:
    labels = {"app": "shop"}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "shop",
            "labels": labels,
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                    "controller": True,
                }
            ],
        },
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {"containers": [{"name": "web", "image": "shop:v1"}]},
            },
        },
    }


def _operator_made_shop(
    api: client.ApiClient, namespace: str, tmp_path: Path
) -> tuple[Target, dict[str, Any]]:
    """The shop target, and its Deployment as the operator made it: under the operator's
    field manager, owned by an object standing in for the custom resource (anything can own)."""
    target = load_target(shop_target(tmp_path, namespace=namespace))
    owner = api.sanitize_for_serialization(
        client.CoreV1Api(api).create_namespaced_config_map(
            namespace, {"metadata": {"name": "shop-owner"}}, field_manager="compare-test"
        )
    )
    client.AppsV1Api(api).create_namespaced_deployment(
        namespace, _deployment(owner), field_manager=OPERATOR
    )
    return target, owner


def test_other_managers_fields_before_the_baseline_are_reported_or_refused(
    api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target, owner = _operator_made_shop(api, namespace, tmp_path)
    apps = client.AppsV1Api(api)
    apps.patch_namespaced_deployment(
        "shop", namespace, {"metadata": {"labels": {"team": "web"}}}, field_manager="kubectl-label"
    )

    warnings: list[str] = []
    desired = take_baseline(api, target, [owner], namespace, timeout=60, warn=warnings.append)
    assert [item.kind for item in desired.items] == ["Deployment"]
    # The label is the only foreign field: the operator's own fields, kube-controller-manager's
    # revision annotation and status are nobody's concern.
    assert warnings == [
        f"warning: baseline of shop in {namespace}: Deployment shop metadata.labels.team"
        " (field manager kubectl-label): set by another field manager than the operator's;"
        " kept as desired state"
    ]
    stored = baseline.load(api, namespace, target.name)
    assert stored is not None and stored[0]["metadata"]["labels"]["team"] == "web"

    apps.patch_namespaced_deployment(
        "shop", namespace, {"spec": {"minReadySeconds": 3}}, field_manager="kubectl-patch"
    )
    with pytest.raises(CompareError) as refused:
        take_baseline(api, target, [owner], namespace, timeout=60, warn=warnings.append)
    message = refused.value.message
    assert "\n" not in message
    assert message == (
        f"{target.source}: operator: the baseline cannot be trusted: Deployment shop"
        " spec.minReadySeconds (field manager kubectl-patch) is owned by another field manager"
        " than the operator's: if kubectl-patch is the operator's own, list it in"
        " operator.fieldManagers; else set operator.reclaimForeign: true (the object is"
        " deleted for the operator to re-create it) or delete it yourself and let the operator"
        " re-create it (an undo by hand stays that manager's)"
    )


def test_a_manager_named_as_the_operators_or_a_reclaimed_object_lets_the_baseline_stand(
    api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target, owner = _operator_made_shop(api, namespace, tmp_path)
    apps = client.AppsV1Api(api)
    # `kubectl set image`, then its exact undo: the value is the operator's again, the field
    # stays kubectl-set's.
    for image in ("shop:v2", "shop:v1"):
        apps.patch_namespaced_deployment(
            "shop",
            namespace,
            {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": image}]}}}},
            field_manager="kubectl-set",
        )
    with pytest.raises(CompareError, match="kubectl-set"):
        take_baseline(api, target, [owner], namespace, timeout=60)
    # Named as the operator's own (the target's operator.fieldManagers): it stands.
    take_baseline(api, target, [owner], namespace, timeout=60, known_managers=["kubectl-set"])

    # Reclaimed: deleted, and made again by the operator (played here by a loop that creates
    # the Deployment whenever it is missing, as an operator's reconcile does).
    before = apps.read_namespaced_deployment("shop", namespace).metadata.uid
    stop = threading.Event()

    def operator() -> None:
        while not stop.wait(0.2):
            try:
                apps.read_namespaced_deployment("shop", namespace)
            except client.ApiException as exc:
                if exc.status == 404:
                    apps.create_namespaced_deployment(
                        namespace, _deployment(owner), field_manager=OPERATOR
                    )

    worker = threading.Thread(target=operator, daemon=True)
    worker.start()
    lines: list[str] = []
    try:
        desired = take_baseline(
            api, target, [owner], namespace, timeout=60, warn=lines.append, reclaim=True
        )
    finally:
        stop.set()
        worker.join(timeout=10)
    assert [item.kind for item in desired.items] == ["Deployment"]
    assert lines == [
        f"baseline of shop in {namespace}: Deployment shop held another field manager's"
        " content: deleted, and re-created by the operator"
    ]
    live = apps.read_namespaced_deployment("shop", namespace)
    assert live.metadata.uid != before
    assert "kubectl-set" not in {m.manager for m in live.metadata.managed_fields}


def test_a_reclaimed_object_nobody_re_creates_is_one_line(
    api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target, owner = _operator_made_shop(api, namespace, tmp_path)
    apps = client.AppsV1Api(api)
    apps.patch_namespaced_deployment(
        "shop", namespace, {"spec": {"minReadySeconds": 3}}, field_manager="kubectl-patch"
    )
    with pytest.raises(CompareError) as refused:
        take_baseline(api, target, [owner], namespace, timeout=15, reclaim=True)
    message = refused.value.message
    assert "\n" not in message and "did not re-create Deployment shop" in message
