"""The pure parts of the argocd approach: the Application it writes and how its status reads."""

from __future__ import annotations

from typing import Any

import pytest

from compare.approaches.argocd.application import (
    COMPARE_OPTIONS,
    IN_CLUSTER,
    RESOURCES_FINALIZER,
    SERVER_SIDE_DIFF,
    THREE_WAY_DIFF,
    application_state,
    instance_name,
)
from compare.approaches.argocd.controllers import redis_args
from compare.approaches.argocd.install import ARGOCD_NAMESPACE, PART_OF, settings_documents
from compare.approaches.argocd.sync import (
    TRACKING_ID,
    argocd_applied,
    check_diff_strategy,
    kept_by_argocd,
)
from compare.errors import CompareError
from tests.approaches.argocd.helpers import argocd_application
from tests.helpers import make_webapp


def test_the_application_names_the_chart_values_and_self_heal() -> None:
    app = argocd_application(
        make_webapp("shop", replicas=3), "ns1", repository_url="http://127.0.0.1:1234"
    )
    assert app["metadata"] == {
        "name": "shop",
        "namespace": "ns1",
        "finalizers": [RESOURCES_FINALIZER],
    }
    spec = app["spec"]
    assert spec["source"]["repoURL"] == "http://127.0.0.1:1234"
    assert spec["source"]["chart"] == "webapp"
    assert spec["source"]["helm"]["releaseName"] == "shop"
    assert spec["source"]["helm"]["valuesObject"]["replicaCount"] == 3
    assert spec["destination"] == {"server": IN_CLUSTER, "namespace": "ns1"}
    assert spec["syncPolicy"] == {"automated": {"selfHeal": True, "prune": True}}


def test_argocds_name_of_an_application_outside_its_namespace_is_qualified() -> None:
    assert instance_name("ns1", "shop") == "ns1_shop"
    assert instance_name(ARGOCD_NAMESPACE, "shop") == "shop"


def _app(**status: Any) -> dict[str, Any]:
    return {"spec": {"source": {"targetRevision": "0.1.0"}}, "status": status}


@pytest.mark.parametrize(
    ("app", "state", "text"),
    [
        (None, None, "waiting for the Application"),
        (_app(), None, "sync unknown"),
        (_app(sync={"status": "OutOfSync", "revision": "0.1.0"}), None, "sync OutOfSync"),
        # Synced to an older revision is not this spec's sync.
        (_app(sync={"status": "Synced", "revision": "0.0.9"}), None, "sync Synced"),
        (
            _app(sync={"status": "Synced", "revision": "0.1.0"}, health={"status": "Progressing"}),
            None,
            "Synced, health Progressing",
        ),
        (
            _app(sync={"status": "Synced", "revision": "0.1.0"}, health={"status": "Healthy"}),
            True,
            "Synced and Healthy",
        ),
        (
            _app(
                sync={"status": "Synced", "revision": "0.1.0"},
                health={"status": "Healthy"},
                operationState={"phase": "Running"},
            ),
            None,
            "Synced and Healthy, operation Running",
        ),
        (
            _app(
                operationState={
                    "phase": "Running",
                    "retryCount": 1,
                    "syncResult": {
                        "resources": [
                            {"kind": "Service", "name": "s", "status": "Synced"},
                            {
                                "kind": "Deployment",
                                "name": "d",
                                "status": "SyncFailed",
                                "message": "refused\nmore",
                            },
                        ]
                    },
                }
            ),
            False,
            "sync failed, retrying: Deployment d: refused",
        ),
        (
            _app(operationState={"phase": "Failed", "message": "one or more objects failed\nx"}),
            False,
            "sync Failed: one or more objects failed",
        ),
        (
            _app(conditions=[{"type": "ComparisonError", "message": "repo down\nmore"}]),
            None,
            "repo down",
        ),
    ],
)
def test_application_state(app: dict[str, Any] | None, state: bool | None, text: str) -> None:
    assert application_state(app) == (state, text)


def test_settings_carry_argocds_label_and_redis_is_loopback_without_persistence(
    tmp_path: Any,
) -> None:
    settings = [d for d in settings_documents("a2V5") if d["kind"] in {"ConfigMap", "Secret"}]
    assert {d["metadata"]["name"] for d in settings} == {
        "argocd-cm",
        "argocd-rbac-cm",
        "argocd-secret",
    }
    assert all(d["metadata"]["labels"] == PART_OF for d in settings)
    args = redis_args("redis-server", 6399, tmp_path)
    assert args[args.index("--bind") + 1] == "127.0.0.1"
    assert args[args.index("--save") + 1] == ""
    assert args[args.index("--appendonly") + 1] == "no"


def test_tracking_annotation_per_object() -> None:
    objects = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"}},
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "shop", "annotations": {"a": "b", TRACKING_ID: "chart's"}},
        },
    ]
    applied = argocd_applied(objects, application="ns1-shop", namespace="ns1")
    assert applied[0]["metadata"]["annotations"] == {
        TRACKING_ID: "ns1-shop:apps/Deployment:ns1/shop"
    }
    # The core group is empty; Argo CD's value wins over a chart's.
    assert applied[1]["metadata"]["annotations"] == {
        "a": "b",
        TRACKING_ID: "ns1-shop:/Service:ns1/shop",
    }
    assert "annotations" not in objects[0]["metadata"]  # the input is not changed


def test_diff_strategy_is_an_application_annotation() -> None:
    webapp = make_webapp("shop")
    default = argocd_application(webapp, "ns1", repository_url="http://127.0.0.1:1")
    assert "annotations" not in default["metadata"]
    ssd = argocd_application(
        webapp, "ns1", repository_url="http://127.0.0.1:1", diff=SERVER_SIDE_DIFF
    )
    assert ssd["metadata"]["annotations"] == {COMPARE_OPTIONS: "ServerSideDiff=true"}
    check_diff_strategy(THREE_WAY_DIFF)
    with pytest.raises(CompareError, match=r"^--argocd-diff 'client': must be one of three-way"):
        check_diff_strategy("client")


def _obj(kind: str, api_version: str = "v1", **annotations: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"annotations": annotations}}


@pytest.mark.parametrize(
    ("obj", "kept"),
    [
        (_obj("CustomResourceDefinition", "apiextensions.k8s.io/v1"), "never deletes a CRD"),
        # Another group's kind of that name is not a CRD to Argo CD.
        (_obj("CustomResourceDefinition", "example.com/v1"), None),
        (_obj("ConfigMap", **{"helm.sh/resource-policy": "keep"}), "helm.sh/resource-policy"),
        (
            _obj("Secret", **{"argocd.argoproj.io/sync-options": "Prune=false, Delete=false"}),
            "Delete=false",
        ),
        (_obj("Secret", **{"argocd.argoproj.io/sync-options": "Prune=false"}), None),
        (_obj("Deployment", "apps/v1"), None),
    ],
)
def test_what_argocd_keeps_at_an_applications_deletion(
    obj: dict[str, Any], kept: str | None
) -> None:
    why = kept_by_argocd(obj)
    assert (why is None) if kept is None else (why is not None and kept in why), why
