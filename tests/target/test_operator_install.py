"""An operator's install into the cluster (`operator.install.kustomize` / `chart`).

Placement, on the real API server: a kustomization with a fixed namespace (a kubebuilder
`config/default`) installs each object where `kubectl apply -k` would - its own namespace,
else the install's, none when cluster-scoped - its Namespace and CRD first, and a rollback
removes exactly what it created, the namespace last. Without a cluster: which objects run pods,
and that only the embedded cluster (where pods run no code) refuses such an install.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from compare import approaches as registry
from compare.approaches import load_target
from compare.approaches.operator.arm import install_documents
from compare.approaches.operator.incluster import check_runs_here, pod_workloads
from compare.approaches.operator.placement import ordered
from compare.cluster import ClusterTarget
from compare.errors import CompareError
from tests.helpers import eventually

from .operator_targets import stuck_target

GROUP = "placed.example.com"
CRD_NAME = f"gizmos.{GROUP}"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": CRD_NAME},
    "spec": {
        "group": GROUP,
        "scope": "Namespaced",
        "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo"},
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


def _doc(kind: str, name: str, api_version: str = "v1", **meta: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, **meta}}


def test_pod_workloads_are_the_objects_that_make_pods() -> None:
    docs = [
        _doc("Deployment", "manager", "apps/v1", namespace="op-system"),
        _doc("StatefulSet", "store", "apps/v1"),
        _doc("DaemonSet", "agent", "apps/v1"),
        _doc("Job", "migrate", "batch/v1"),
        _doc("CronJob", "tidy", "batch/v1"),
        _doc("Pod", "one"),
        {**_doc("Deployment", "idle", "apps/v1"), "spec": {"replicas": 0}},
        _doc("ServiceAccount", "manager", namespace="op-system"),
        CRD,
    ]
    assert pod_workloads(docs) == [
        "Deployment op-system/manager",
        "StatefulSet store",
        "DaemonSet agent",
        "Job migrate",
        "CronJob tidy",
        "Pod one",
    ]


@pytest.mark.parametrize("form", ["kustomize", "chart"])
def test_only_the_embedded_cluster_refuses_an_install_that_runs_pods(
    tmp_path: Path, form: str
) -> None:
    path = stuck_target(tmp_path, "gadgets", form=form, manager=True)
    target = load_target(path)
    operator = target.operator_arm("operator")
    documents = install_documents(target, operator, "gadgets")
    embedded = ClusterTarget(tmp_path / "kubeconfig", embedded=True)
    with pytest.raises(CompareError) as refused:
        check_runs_here(embedded, target, operator, documents)
    assert refused.value.exit_code == 2
    assert refused.value.message.startswith(
        f"{path}: operator.install.{form}: the operator (Deployment gadget-operator) runs its"
        " manager in pods, and pods run no code on the embedded cluster"
    )
    # Another cluster (--kubeconfig of one that is not the toolkit's) runs pods.
    check_runs_here(ClusterTarget(tmp_path / "kubeconfig"), target, operator, documents)
    # Without its manager the install holds nothing that must run: not refused anywhere.
    (tmp_path / "bare").mkdir()
    bare = stuck_target(tmp_path / "bare", "gadgets", form=form)
    bare_target = load_target(bare)
    bare_operator = bare_target.operator_arm("operator")
    check_runs_here(
        embedded,
        bare_target,
        bare_operator,
        install_documents(bare_target, bare_operator, "gadgets"),
    )


def test_namespaces_then_crds_then_the_rest_in_their_order() -> None:
    docs = [
        _doc("ConfigMap", "a"),
        CRD,
        _doc("ServiceAccount", "b"),
        _doc("Namespace", "n"),
        _doc("ConfigMap", "c"),
    ]
    assert [d["metadata"]["name"] for d in ordered(docs)] == [
        "n",
        CRD_NAME,
        "a",
        "b",
        "c",
    ]


def _fixed_namespace_install(folder: Path, fixed: str, role: str) -> Path:
    """A kustomization like a kubebuilder config/default (its namespace fixed, listed last
    here), with an object without a namespace, a cluster-scoped one and a custom resource of
    its own CRD; the target installs it."""
    directory = folder / "config"
    directory.mkdir(parents=True)
    objects = {
        "configmap.yaml": _doc("ConfigMap", "gizmo-settings"),
        "account.yaml": _doc("ServiceAccount", "gizmo-manager", namespace=fixed),
        "role.yaml": {
            **_doc("ClusterRole", role, "rbac.authorization.k8s.io/v1"),
            "rules": [{"apiGroups": [GROUP], "resources": ["gizmos"], "verbs": ["get"]}],
        },
        "default.yaml": {
            **_doc("Gizmo", "defaults", f"{GROUP}/v1", namespace=fixed),
            "spec": {"size": 1},
        },
        "crd.yaml": CRD,
        "namespace.yaml": _doc("Namespace", fixed),
    }
    for name, body in objects.items():
        (directory / name).write_text(yaml.safe_dump(body))
    (directory / "kustomization.yaml").write_text(yaml.safe_dump({"resources": list(objects)}))
    target = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "gizmo",
        "operator": {
            "install": {"kustomize": "config"},
            "resources": [
                {"apiVersion": f"{GROUP}/v1", "kind": "Gizmo", "metadata": {"name": "one"}}
            ],
            "ready": {"condition": "Ready"},
        },
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(target))
    return path


@pytest.mark.cluster
def test_a_kustomization_with_a_fixed_namespace_installs_each_object_in_its_place(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    suffix = uuid.uuid4().hex[:6]
    fixed, role = f"t-fixed-{suffix}", f"t-gizmo-reader-{suffix}"
    target = load_target(_fixed_namespace_install(tmp_path, fixed, role))
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    custom = client.CustomObjectsApi(api)
    # There before the install: left by its removal (only what the install created goes).
    rbac.create_cluster_role({"metadata": {"name": role}, "rules": []})
    try:
        operator = registry.get("operator")
        remove = operator.install_target(cluster, target, namespace, timeout=60)
        assert remove is not None
        # Its own namespace (made first), the install's for what names none, none for the
        # cluster-scoped; the custom resource after its CRD was established.
        assert core.read_namespace(fixed).status.phase == "Active"
        assert core.read_namespaced_service_account("gizmo-manager", fixed)
        assert core.read_namespaced_config_map("gizmo-settings", namespace)
        assert rbac.read_cluster_role(role).rules[0].resources == ["gizmos"]
        assert custom.get_namespaced_custom_object(GROUP, "v1", fixed, "gizmos", "defaults")

        remove()
        names = [n.metadata.name for n in core.list_namespace().items]
        assert fixed not in names
        assert namespace in names  # not the install's: it was there before
        assert not core.list_namespaced_config_map(
            namespace, field_selector="metadata.name=gizmo-settings"
        ).items
        crds = client.ApiextensionsV1Api(api).list_custom_resource_definition().items
        assert CRD_NAME not in [c.metadata.name for c in crds]
        assert rbac.read_cluster_role(role).rules[0].resources == ["gizmos"]
    finally:
        rbac.delete_cluster_role(role)
        extensions = client.ApiextensionsV1Api(api)

        def crd_gone() -> bool:
            crds = extensions.list_custom_resource_definition().items
            return CRD_NAME not in [c.metadata.name for c in crds]

        if not crd_gone():
            extensions.delete_custom_resource_definition(CRD_NAME)
        eventually(crd_gone, timeout=30, what=f"CRD {CRD_NAME} to be gone")
