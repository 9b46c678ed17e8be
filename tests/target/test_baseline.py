"""The operator arm's baseline without a cluster: what of a live object is desired state, and
that the judge holds a baseline the way a heal leaves it (a recreated Service's new clusterIP,
a restored template's new revision are no drift; a changed field is)."""

from __future__ import annotations

import copy
from typing import Any

from compare.approaches.operator.baseline import cleaned, desired_of, unallocated
from compare.judge import diff_object
from compare.judge.secrets import PREFIX, hashed_secret

LIVE_DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "shop",
        "namespace": "ns",
        "uid": "u-1",
        "resourceVersion": "42",
        "generation": 1,
        "creationTimestamp": "2026-01-01T00:00:00Z",
        "labels": {"app": "shop"},
        "annotations": {"deployment.kubernetes.io/revision": "1", "team": "web"},
        "ownerReferences": [{"kind": "WebApp", "name": "shop", "uid": "cr", "controller": True}],
        "managedFields": [{"manager": "webapp-operator"}],
    },
    "spec": {"replicas": 5, "template": {"spec": {"containers": [{"name": "web", "image": "a"}]}}},
    "status": {"readyReplicas": 5},
}
LIVE_SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "shop", "uid": "u-2"},
    "spec": {
        "type": "NodePort",
        "clusterIP": "10.0.0.7",
        "clusterIPs": ["10.0.0.7"],
        "ports": [{"name": "http", "port": 80, "nodePort": 31000}],
    },
}


def test_identity_status_and_controller_annotations_are_no_desired_state() -> None:
    kept = cleaned(LIVE_DEPLOYMENT)
    assert kept["metadata"] == {
        "name": "shop",
        "labels": {"app": "shop"},
        "annotations": {"team": "web"},
    }
    assert "status" not in kept
    assert kept["spec"] == LIVE_DEPLOYMENT["spec"]


def test_a_services_allocated_fields_are_not_judged_but_a_headless_none_is() -> None:
    raw = unallocated(cleaned(LIVE_SERVICE))
    assert "clusterIP" not in raw["spec"] and "clusterIPs" not in raw["spec"]
    assert raw["spec"]["ports"] == [{"name": "http", "port": 80}]
    headless = copy.deepcopy(LIVE_SERVICE)
    headless["spec"].update(clusterIP="None", clusterIPs=["None"], type="ClusterIP")
    assert unallocated(headless)["spec"]["clusterIP"] == "None"


def test_the_judge_holds_a_baseline_as_a_heal_leaves_it() -> None:
    desired = desired_of([cleaned(LIVE_DEPLOYMENT), cleaned(LIVE_SERVICE)])
    deployment, service = desired.items
    # Recreated by the operator: new uid, new revision, new clusterIP and nodePort.
    healed = copy.deepcopy(LIVE_DEPLOYMENT)
    healed["metadata"].update(uid="u-9", resourceVersion="77")
    healed["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "3"
    assert diff_object(deployment.root, deployment.defaulted, healed, raw=deployment.raw) == []
    recreated = copy.deepcopy(LIVE_SERVICE)
    recreated["spec"].update(clusterIP="10.0.0.99", clusterIPs=["10.0.0.99"])
    recreated["spec"]["ports"][0]["nodePort"] = 32000
    assert diff_object(service.root, service.defaulted, recreated, raw=service.raw) == []
    # A changed field, a removed team annotation: drift.
    drifted = copy.deepcopy(healed)
    drifted["spec"]["replicas"] = 2
    del drifted["metadata"]["annotations"]["team"]
    found = [str(m) for m in diff_object("deployment", deployment.defaulted, drifted)]
    assert sorted(found) == [
        "deployment.metadata.annotations.team: removed (want 'web')",
        "deployment.spec.replicas: want 5, got 2",
    ]


def test_a_secret_in_the_baseline_is_held_as_hashes_only() -> None:
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "s"},
        "data": {"k": "dg=="},
    }
    desired = desired_of([cleaned(hashed_secret(secret))])
    assert desired.items[0].defaulted["data"]["k"].startswith(PREFIX)
    assert "dg==" not in repr(desired)
