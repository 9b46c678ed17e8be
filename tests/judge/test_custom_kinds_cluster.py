"""Any kind the API server serves, judged by the one closed-world rule, on the real cluster.

tests/fixtures/charts/crd-app has its own CRD in crds/ and a custom resource of it in its
templates: deployed by Helm, its custom resource is desired state (defaulted by the API
server from the CRD's schema), read and watched by path; a changed spec is drift, a status
written by nobody is not, a deleted one is missing. Its APIService, whose Service never
answers, holds (its Available condition is status). An APIService (a kind whose name is fixed)
and a CRD in a chart's templates are dry-run like any object.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from compare.approaches import load_target
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import deploy_target, uninstall_target
from compare.errors import CompareError
from compare.judge import NamespaceWatch, problems, read, with_api_defaults
from compare.judge.desired import served_row
from compare.judge.rest import request
from compare.judge.verdict import mismatches
from compare.kube.served import apply_all
from tests.helpers import eventually

pytestmark = pytest.mark.cluster

CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "crd-app"
GIZMOS = "gizmos.crkinds.example.com"  # crd-app's crds/
GIZMO = "Gizmo.v1.crkinds.example.com"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _target(folder: Path) -> Path:
    arm = {"chart": {"path": str(CHART)}, "release": "gizmo", "values": {"apiService": True}}
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "crd-app",
        "helm": arm,
    }
    path = folder / "crd-app.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _delete_crd(api: client.ApiClient, name: str) -> None:
    try:
        request(api, "DELETE", f"{CRDS}/{name}", timeout=10.0)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


def test_a_charts_custom_resource_is_judged_closed_world(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target = load_target(_target(tmp_path))
    helm = target.chart_arm("helm")
    path = f"/apis/crkinds.example.com/v1/namespaces/{namespace}/gizmos/gizmo"
    _, desired = deploy_target(cluster, target, helm, namespace, timeout=60)
    watch = NamespaceWatch(api, namespace, kinds=desired.kinds)
    try:
        gizmo = desired.first("Gizmo")
        assert gizmo is not None and gizmo.key == GIZMO and gizmo.root == "gizmo"
        assert GIZMO in desired.kinds
        # Defaulted by the API server from the CRD's schema, as any built-in default is.
        assert gizmo.defaulted["spec"] == {"color": "blue", "size": 1}
        assert problems(desired, watch.start()) == []
        # Its APIService's Service never answers: not Available, a status - it holds.
        apiservice = desired.first("APIService")
        assert apiservice is not None and apiservice.key == "APIService.v1.apiregistration.k8s.io"

        def unavailable() -> bool:
            live = watch.reading().get(apiservice.key, apiservice.name) or {}
            conditions = (live.get("status") or {}).get("conditions") or []
            return any(c["type"] == "Available" and c["status"] == "False" for c in conditions)

        eventually(unavailable, what="the APIService reported unavailable")
        assert problems(desired, watch.reading()) == []
        # A status written by nobody (no controller runs here) is a report, not drift.
        request(
            api,
            "PATCH",
            f"{path}/status",
            body={"status": {"phase": "Invented"}},
            content_type="application/merge-patch+json",
            timeout=10.0,
        )
        eventually(lambda: (watch.reading().get(GIZMO, "gizmo") or {}).get("status"), what="status")
        assert problems(desired, watch.reading()) == []
        # A changed spec is drift, seen by the watch as by a full read.
        request(
            api,
            "PATCH",
            path,
            body={"spec": {"color": "red"}},
            content_type="application/merge-patch+json",
            timeout=10.0,
        )
        drift = "gizmo.spec.color: want 'blue', got 'red'"
        eventually(lambda: drift in problems(desired, watch.reading()), what="drift watched")
        assert drift in problems(desired, read(api, namespace, desired.kinds))
        # A deleted one is missing.
        request(api, "DELETE", path, timeout=10.0)
        eventually(lambda: "gizmo: missing" in problems(desired, watch.reading()), what="missing")
    finally:
        watch.stop()
        uninstall_target(cluster, helm, namespace)
        _delete_crd(api, GIZMOS)  # Helm never removes crds/


def test_an_apiservice_and_a_crd_in_templates_are_dry_run_like_any_object(
    api: client.ApiClient, namespace: str
) -> None:
    group = f"{namespace}.crkinds.example.com"
    crd: dict[str, Any] = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"sprockets.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": "Sprocket", "plural": "sprockets"},
            "scope": "Cluster",
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                        }
                    },
                }
            ],
        },
    }
    sprocket = {
        "apiVersion": f"{group}/v1",
        "kind": "Sprocket",
        "metadata": {"name": "one"},
        "spec": {"teeth": 12},
    }
    # A custom resource whose CRD is in the same manifest but not on the cluster: one line.
    with pytest.raises(CompareError, match=f"its CustomResourceDefinition sprockets.{group} is"):
        with_api_defaults(api, namespace, [crd, sprocket])
    with pytest.raises(CompareError, match="no CustomResourceDefinition of it is on the cluster"):
        served_row(api, {**sprocket, "apiVersion": "none.crkinds.example.com/v1"})
    try:
        # Applied by a deployer just now, not Established yet: its kind waits for it
        # (bounded), then the custom resource (cluster-scoped) is dry-run; the CRD itself,
        # whose name is fixed, by a server-side apply dry-run onto the one that exists.
        apply_all(api, [crd])
        desired = with_api_defaults(api, namespace, [crd, sprocket])
        assert [i.key for i in desired.items] == [
            "CustomResourceDefinition",
            f"Sprocket.v1.{group}",
        ]
        assert desired.items[1].defaulted["spec"] == {"teeth": 12}
        # The Sprocket is missing (never applied); the CRD holds.
        found = [str(m) for m in mismatches(desired, read(api, namespace, desired.kinds))]
        assert found == ["sprocket: missing"], found
        # The APIService the API server registered for the CRD's group: a kind whose names
        # are fixed (`version.group`), owned by the API server; judged like any object, its
        # Available condition is status. What the API server wrote alone (its automanaged
        # label) is its own, not drift.
        service_path = f"/apis/apiregistration.k8s.io/v1/apiservices/v1.{group}"
        live = eventually(lambda: _read(api, service_path), what="the APIService")
        apiservice: dict[str, Any] = {
            "apiVersion": "apiregistration.k8s.io/v1",
            "kind": "APIService",
            "metadata": {"name": f"v1.{group}"},
            "spec": {k: live["spec"][k] for k in ("group", "version", "groupPriorityMinimum")}
            | {"versionPriority": live["spec"]["versionPriority"]},
        }
        desired = with_api_defaults(api, namespace, [apiservice])
        assert desired.items[0].key == "APIService.v1.apiregistration.k8s.io"
        assert "labels" not in desired.items[0].defaulted["metadata"]
        assert problems(desired, read(api, namespace, desired.kinds)) == []
        # One that does not exist yet: dry-run under its own name (a generated one is refused).
        other = {**apiservice, "metadata": {"name": f"v2.{group}"}}
        other["spec"] = {**apiservice["spec"], "version": "v2"}
        assert with_api_defaults(api, namespace, [other]).items[0].name == f"v2.{group}"
    finally:
        _delete_crd(api, crd["metadata"]["name"])


def _read(api: client.ApiClient, path: str) -> dict[str, Any] | None:
    try:
        return request(api, "GET", path, timeout=10.0)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
