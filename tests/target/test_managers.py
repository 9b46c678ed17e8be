"""Who wrote a target operator's baseline (`compare.approaches.operator.managers`), without a
cluster: the operator's managers found from what only it writes, Kubernetes' own and status writers
legitimate, every other manager's fields reported, content refused. The managedFields below
are shaped as the API server records them (a kopf operator's Deployment, then `kubectl label`
and `kubectl patch`); the cluster test is tests/target/test_operator_target.py."""

from __future__ import annotations

import copy
from typing import Any

from compare.approaches.operator.baseline import (
    CONTROLLER_ANNOTATION_PREFIXES,
    CONTROLLER_ANNOTATIONS,
)
from compare.approaches.operator.managers import (
    ForeignField,
    field_paths,
    foreign_fields,
    made_by_kubernetes,
    operator_managers,
    render,
    verdict,
)

CR: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {
        "name": "shop",
        "uid": "cr-1",
        "managedFields": [
            {"manager": "compare", "operation": "Apply", "fieldsV1": {"f:spec": {"f:image": {}}}},
            {
                "manager": "shop-operator",
                "operation": "Update",
                "subresource": "status",
                "fieldsV1": {"f:status": {"f:phase": {}}},
            },
        ],
    },
}
OPERATOR_ENTRY: dict[str, Any] = {
    "manager": "shop-operator",
    "operation": "Update",
    "time": "2026-12-05T02:56:52Z",
    "fieldsV1": {
        "f:metadata": {
            "f:labels": {".": {}, "f:app": {}},
            "f:ownerReferences": {".": {}, 'k:{"uid":"cr-1"}': {}},
        },
        "f:spec": {
            "f:replicas": {},
            "f:template": {
                "f:spec": {
                    "f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}, "f:name": {}}}
                }
            },
        },
    },
}
KCM_ENTRY: dict[str, Any] = {
    "manager": "kube-controller-manager",
    "operation": "Update",
    "subresource": "status",
    "time": "2026-12-05T02:56:52Z",
    "fieldsV1": {
        "f:metadata": {"f:annotations": {"f:deployment.kubernetes.io/revision": {}}},
        "f:status": {"f:replicas": {}},
    },
}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {
        "name": "shop",
        "uid": "d-1",
        "ownerReferences": [{"uid": "cr-1", "kind": "WebApp", "name": "shop"}],
        "managedFields": [OPERATOR_ENTRY, KCM_ENTRY],
    },
}


def _with(*entries: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(DEPLOYMENT)
    obj["metadata"]["managedFields"] += list(entries)
    return obj


def _found(obj: dict[str, Any], owners: list[dict[str, Any]] | None = None) -> list[ForeignField]:
    return foreign_fields(
        [obj],
        [CR] if owners is None else owners,
        controller_annotations=CONTROLLER_ANNOTATIONS,
        controller_prefixes=CONTROLLER_ANNOTATION_PREFIXES,
    )


def test_field_paths_read_as_the_fields_they_name() -> None:
    paths = [render(p) for p in field_paths(OPERATOR_ENTRY["fieldsV1"])]
    assert paths == [
        "metadata.labels.app",
        "metadata.ownerReferences[uid=cr-1]",
        "spec.replicas",
        "spec.template.spec.containers[name=web].image",
        "spec.template.spec.containers[name=web].name",
    ]
    assert [render(p) for p in field_paths({"f:metadata": {"f:finalizers": {'v:"x"': {}}}})] == [
        "metadata.finalizers[x]"
    ]


def test_the_operator_is_whoever_wrote_the_owner_reference_or_the_resources_status() -> None:
    assert operator_managers([DEPLOYMENT], [CR]) == {"shop-operator"}
    # Status alone names it too (its reference kept by nobody).
    bare = _with()
    bare["metadata"]["managedFields"][0] = {
        **OPERATOR_ENTRY,
        "fieldsV1": {"f:spec": {"f:replicas": {}}},
    }
    assert operator_managers([bare], [CR]) == {"shop-operator"}
    # Kubernetes' own writers are never the operator.
    assert "kube-controller-manager" not in operator_managers([DEPLOYMENT], [CR])


def test_an_operators_own_object_has_nothing_foreign() -> None:
    # kube-controller-manager's revision annotation and status are its own business.
    assert _found(DEPLOYMENT) == []


def test_a_foreign_label_is_a_warning_and_the_baseline_stands() -> None:
    label = {
        "manager": "kubectl-label",
        "operation": "Update",
        "time": "2026-12-05T02:57:00Z",
        "fieldsV1": {"f:metadata": {"f:labels": {"f:team": {}}}},
    }
    found = _found(_with(label))
    assert found == [
        ForeignField("Deployment", "shop", "metadata.labels.team", "kubectl-label", "Update")
    ]
    warnings, refusal = verdict(found)
    assert refusal is None
    assert warnings == [
        "Deployment shop metadata.labels.team (field manager kubectl-label): set by another"
        " field manager than the operator's; kept as desired state"
    ]


def test_a_foreign_spec_field_refuses_the_baseline_naming_object_field_and_manager() -> None:
    patch = {
        "manager": "kubectl-patch",
        "operation": "Update",
        "time": "2026-12-05T02:57:00Z",
        "fieldsV1": {
            "f:spec": {
                "f:minReadySeconds": {},
                "f:template": {
                    "f:spec": {"f:containers": {'k:{"name":"web"}': {"f:imagePullPolicy": {}}}}
                },
            }
        },
    }
    edit = {**patch, "manager": "kubectl-edit", "fieldsV1": {"f:spec": {"f:paused": {}}}}
    found = _found(_with(patch, edit))
    assert [(f.path, f.manager, f.content) for f in found] == [
        ("spec.minReadySeconds", "kubectl-patch", True),
        ("spec.template.spec.containers[name=web].imagePullPolicy", "kubectl-patch", True),
        ("spec.paused", "kubectl-edit", True),
    ]
    warnings, refusal = verdict(found)
    assert warnings == []
    assert refusal == (
        "the baseline cannot be trusted: Deployment shop spec.minReadySeconds (field manager"
        " kubectl-patch) and 2 more field(s) are owned by another field manager than the"
        " operator's: if kubectl-edit, kubectl-patch are the operator's own, list them in"
        " operator.fieldManagers; else set operator.reclaimForeign: true (the object is"
        " deleted for the operator to re-create it) or delete it yourself and let the operator"
        " re-create it (an undo by hand stays that manager's)"
    )


def test_a_manager_the_target_names_is_the_operators() -> None:
    # The same operator run as `main` (go run) wrote the object, then as `manager` (its binary).
    again = {
        "manager": "manager",
        "operation": "Update",
        "time": "2026-12-05T02:57:00Z",
        "fieldsV1": {"f:spec": {"f:minReadySeconds": {}}},
    }
    obj = _with(again)
    assert [f.manager for f in _found(obj)] == ["manager"]
    assert foreign_fields([obj], [CR], known=["manager"]) == []


def test_a_field_the_operator_owns_too_is_the_operators() -> None:
    # Server-side apply: both applied the same image; the operator owns it as well.
    shared = {
        "manager": "someone",
        "operation": "Apply",
        "time": "2026-12-05T02:57:00Z",
        "fieldsV1": {
            "f:spec": {
                "f:template": {"f:spec": {"f:containers": {'k:{"name":"web"}': {"f:image": {}}}}}
            }
        },
    }
    assert _found(_with(shared)) == []


def test_identity_status_and_controller_annotations_are_not_reported() -> None:
    other = {
        "manager": "tool",
        "operation": "Update",
        "time": "2026-12-05T02:57:00Z",
        "fieldsV1": {
            "f:metadata": {
                "f:finalizers": {'v:"tool/x"': {}},
                "f:annotations": {"f:deployment.kubernetes.io/revision": {}},
            },
            "f:status": {"f:observedGeneration": {}},
        },
    }
    status = {**other, "subresource": "status", "fieldsV1": {"f:spec": {"f:replicas": {}}}}
    assert _found(_with(other, status)) == []


def test_without_any_reference_or_status_the_creator_is_the_operator() -> None:
    created = {
        **OPERATOR_ENTRY,
        "manager": "maker",
        "fieldsV1": {"f:spec": {"f:replicas": {}}},
    }
    later = {
        "manager": "kubectl-annotate",
        "operation": "Update",
        "time": "2026-12-05T02:58:00Z",
        "fieldsV1": {"f:metadata": {"f:annotations": {"f:note": {}}}},
    }
    obj = _with()
    obj["metadata"]["managedFields"] = [later, created]
    owner = {**CR, "metadata": {"name": "shop", "uid": "cr-1"}}
    found = _found(obj, [owner])
    assert [(f.path, f.manager) for f in found] == [
        ("metadata.annotations.note", "kubectl-annotate")
    ]


def test_what_kubernetes_made_for_the_operators_objects_is_no_desired_object() -> None:
    # A Service's EndpointSlice: created by kube-controller-manager, owned by the Service.
    slice_ = {
        "kind": "EndpointSlice",
        "metadata": {
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "time": "T1"}
            ]
        },
    }
    assert made_by_kubernetes(slice_)
    assert not made_by_kubernetes(DEPLOYMENT)  # the operator's
    assert not made_by_kubernetes({"metadata": {}})  # nothing recorded: kept
