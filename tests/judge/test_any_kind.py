"""Any kind the API server serves, the pure parts: the qualified name a reading holds a kind
outside the table by, its REST path, and who wrote a field (managedFields) - a field only
Kubernetes' own components wrote is not drift, a server-side apply dry-run keeps no one
else's fields."""

from __future__ import annotations

from typing import Any

import pytest

from compare.judge.desired import from_pairs
from compare.judge.diff import diff_object
from compare.judge.kinds import KINDS, Kind, api_version_of, qualified
from compare.kube.managed import kubernetes_only, owners, without_foreign

GIZMO = Kind("Gizmo", "", "gizmos", served="crkinds.example.com/v1")
APISERVICE = Kind(
    "APIService", "", "apiservices", namespaced=False, served="apiregistration.k8s.io/v1"
)


def test_a_kind_outside_the_table_is_named_with_its_group_and_version() -> None:
    assert qualified("Gizmo", "crkinds.example.com/v1") == "Gizmo.v1.crkinds.example.com"
    assert qualified("Binding", "v1") == "Binding.v1"  # the core group has no name
    assert qualified("Deployment", "apps/v1") == "Deployment"  # the table's own
    assert qualified("HorizontalPodAutoscaler", "autoscaling/v1") == "HorizontalPodAutoscaler"
    # A kind of the table's name in another group is another kind.
    assert qualified("Service", "serving.knative.dev/v1") == "Service.v1.serving.knative.dev"
    assert api_version_of("Gizmo.v1.crkinds.example.com@other") == (
        "Gizmo",
        "crkinds.example.com/v1",
    )
    assert api_version_of("Binding.v1") == ("Binding", "v1")
    assert api_version_of("Deployment") is None


def test_a_served_kind_is_read_by_its_own_path() -> None:
    assert GIZMO.path("ns", "one") == "/apis/crkinds.example.com/v1/namespaces/ns/gizmos/one"
    # Cluster-scoped: the namespace is no part of its path.
    assert APISERVICE.path("ns") == "/apis/apiregistration.k8s.io/v1/apiservices"
    with pytest.raises(ValueError, match="has no typed calls"):
        GIZMO.call(None, "list")  # type: ignore[arg-type]


def _gizmo(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "crkinds.example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": "one", "namespace": "elsewhere"},
        "spec": spec,
    }


def test_desired_custom_resources_are_held_under_their_qualified_kind() -> None:
    gizmo, service = (
        _gizmo(color="blue"),
        {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": "v1.crkinds.example.com", "namespace": "ignored"},
            "spec": {"group": "crkinds.example.com", "version": "v1"},
        },
    )
    desired = from_pairs([(gizmo, gizmo), (service, service)], home="app", rows=[GIZMO, APISERVICE])
    first, second = desired.items
    # Namespaced in another namespace than the reading's own: read there.
    assert first.key == "Gizmo.v1.crkinds.example.com@elsewhere"
    assert first.root == "gizmo/elsewhere/one"
    # Cluster-scoped: the namespace it names is no namespace.
    assert second.key == "APIService.v1.apiregistration.k8s.io" and second.root == "apiservice"
    assert {first.key, second.key} <= set(desired.kinds)


def test_a_kind_of_a_table_name_in_another_group_is_none_of_the_apps_parts() -> None:
    knative = {
        "apiVersion": "serving.knative.dev/v1",
        "kind": "Service",
        "metadata": {"name": "web"},
        "spec": {},
    }
    core = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {}}
    served = Kind("Service", "", "services", served="serving.knative.dev/v1")
    desired = from_pairs(
        [(knative, knative), (core, core)], home="app", rows=[served, KINDS["Service"]]
    )
    assert [i.key for i in desired.items] == ["Service.v1.serving.knative.dev", "Service"]
    assert desired.service is desired.items[1]
    assert desired.of_kind("Service") == [desired.items[1]]


def _entry(manager: str, fields: dict[str, Any], subresource: str | None = None) -> Any:
    entry = {"manager": manager, "operation": "Update", "fieldsV1": fields}
    return {**entry, "subresource": subresource} if subresource else entry


CLAIM_FIELDS = {"f:spec": {"f:volumeName": {}}, "f:metadata": {"f:labels": {"f:bound": {}}}}


def _claim(*entries: Any) -> dict[str, Any]:
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data", "labels": {"bound": "yes"}, "managedFields": list(entries)},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": "pv-1"},
    }


def test_a_field_only_kubernetes_wrote_is_theirs_and_anyone_elses_is_drift() -> None:
    desired = {"kind": "PersistentVolumeClaim", "spec": {"accessModes": ["ReadWriteOnce"]}}
    bound = _claim(_entry("kube-controller-manager", CLAIM_FIELDS))
    assert kubernetes_only(bound, ("spec", "volumeName"))
    assert diff_object("pvc", desired, bound) == []
    # The same fields written by a person (or by Kubernetes and a person) are drift.
    edited = _claim(_entry("kubectl-edit", CLAIM_FIELDS))
    assert [str(m) for m in diff_object("pvc", desired, edited)] == [
        "pvc.spec.volumeName: added 'pv-1'",
        "pvc.metadata.labels: added {'bound': 'yes'}",
    ]
    # A map added whole is theirs only when every key is: one key of someone else's is drift.
    mixed = _claim(_entry("kube-controller-manager", CLAIM_FIELDS))
    mixed["metadata"]["labels"]["team"] = "someone"
    mixed["metadata"]["managedFields"].append(
        _entry("kubectl-label", {"f:metadata": {"f:labels": {"f:team": {}}}})
    )
    assert [str(m) for m in diff_object("pvc", desired, mixed)] == [
        "pvc.metadata.labels: added {'bound': 'yes', 'team': 'someone'}"
    ]
    both = _claim(
        _entry("kube-controller-manager", CLAIM_FIELDS), _entry("kubectl-patch", CLAIM_FIELDS)
    )
    assert not kubernetes_only(both, ("spec", "volumeName"))
    # A write through a subresource (status, scale) is no author of the object's content.
    reported = _claim(_entry("kube-controller-manager", CLAIM_FIELDS, subresource="status"))
    assert owners(reported, ("spec", "volumeName")) == set()
    # No record at all: nobody is known to have written it, so it is drift.
    assert len(diff_object("pvc", desired, _claim())) == 2


def test_owners_follow_list_items_map_keys_and_atomic_fields() -> None:
    fields = {
        "f:spec": {
            "f:containers": {'k:{"name":"web"}': {".": {}, "f:image": {}}},
            "f:selector": {},  # atomic: owned whole
        },
        "f:metadata": {"f:annotations": {"f:example.com/x": {}}},
    }
    obj = {"metadata": {"managedFields": [_entry("kube-apiserver", fields)]}}
    assert owners(obj, ("spec", "containers", "[web]", "image")) == {"kube-apiserver"}
    assert owners(obj, ("spec", "containers", "[web]", "command")) == set()
    assert owners(obj, ("spec", "containers", "[other]")) == set()
    assert owners(obj, ("spec", "selector", "matchLabels", "<app.kubernetes.io/name>")) == {
        "kube-apiserver"
    }
    assert owners(obj, ("metadata", "annotations", "<example.com/x>")) == {"kube-apiserver"}


def test_an_apply_dry_run_keeps_no_field_others_own_alone() -> None:
    applied: dict[str, Any] = {
        "metadata": {
            "name": "v1.example.com",
            "labels": {"auto": "true", "mine": "yes"},
            "managedFields": [
                _entry(
                    "kube-apiserver",
                    {
                        "f:metadata": {"f:labels": {".": {}, "f:auto": {}}},
                        "f:spec": {"f:group": {}, "f:ports": {'k:{"port":80}': {".": {}}}},
                    },
                ),
                _entry("compare-judge", {"f:metadata": {"f:labels": {"f:mine": {}}}}),
                _entry("compare-judge", {"f:spec": {"f:group": {}}}),
                _entry("kube-apiserver", {"f:status": {"f:conditions": {}}}, "status"),
            ],
        },
        "spec": {"group": "example.com", "ports": [{"port": 80}, {"port": 81}]},
        "status": {"conditions": [{"type": "Available"}]},
    }
    kept = without_foreign(applied, "compare-judge")
    # Its label is gone, the shared field stays, the list item only it owned is gone;
    # status is untouched (never judged). The input is unchanged.
    assert kept["metadata"]["labels"] == {"mine": "yes"}
    assert kept["spec"] == {"group": "example.com", "ports": [{"port": 81}]}
    assert kept["status"] == applied["status"]
    assert applied["metadata"]["labels"] == {"auto": "true", "mine": "yes"}
    # A map emptied so is dropped, as the API server omits an empty map.
    only_theirs = {**applied, "metadata": {**applied["metadata"], "labels": {"auto": "true"}}}
    assert "labels" not in without_foreign(only_theirs, "compare-judge")["metadata"]
