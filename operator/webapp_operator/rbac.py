"""Least-privilege RBAC: exactly the verbs and resources the operator (and kopf) use.

One ClusterRole for what is cluster-wide (watching WebApps and their children in every
namespace, posting Events, kopf's discovery of CRDs), and one Role in the operator's own
namespace for the leader-election Lease and the registry ConfigMap, pinned by name where the
API allows it. Secrets are deliberately absent; a test proves the operator is Forbidden there.
The generator writes these to operator/config/rbac/ and the operator chart's rules file.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from webapp_operator.names import (
    API_GROUP,
    CLUSTER_ROLE,
    LEASE_NAME,
    NAMESPACE_ROLE,
    OPERATOR_NAMESPACE,
    PLURAL,
    REGISTRY_CONFIGMAP,
    SERVICE_ACCOUNT,
)

__all__ = [
    "CLUSTER_RULES",
    "NAMESPACE_RULES",
    "Rule",
    "cluster_role",
    "cluster_role_binding",
    "namespace_role",
    "namespace_role_binding",
    "rules_json",
    "service_account",
]


@dataclass(frozen=True)
class Rule:
    """One PolicyRule, with the reason it exists (written into the generated YAML)."""

    why: str
    api_groups: tuple[str, ...]
    resources: tuple[str, ...]
    verbs: tuple[str, ...]
    resource_names: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        rule: dict[str, Any] = {
            "apiGroups": list(self.api_groups),
            "resources": list(self.resources),
            "verbs": list(self.verbs),
        }
        if self.resource_names:
            rule["resourceNames"] = list(self.resource_names)
        return rule


CLUSTER_RULES: tuple[Rule, ...] = (
    Rule(
        "watch WebApps; kopf patches its finalizer and bookkeeping annotations",
        (API_GROUP,),
        (PLURAL,),
        ("get", "list", "watch", "patch"),
    ),
    Rule("write the observed state", (API_GROUP,), (f"{PLURAL}/status",), ("get", "patch")),
    Rule(
        "owner references with blockOwnerDeletion need update on the owner's finalizers",
        (API_GROUP,),
        (f"{PLURAL}/finalizers",),
        ("update",),
    ),
    Rule(
        "the children: watch every event; server-side apply (create when absent, patch) and "
        "JSON patch. Never delete: the garbage collector does, through owner references",
        ("apps",),
        ("deployments",),
        ("get", "list", "watch", "create", "patch"),
    ),
    Rule(
        "the children, as above",
        ("",),
        ("services",),
        ("get", "list", "watch", "create", "patch"),
    ),
    Rule(
        "Created / DriftCorrected / ReconcileFailed events on WebApps",
        ("",),
        ("events",),
        ("create",),
    ),
    Rule(
        "kopf discovers the WebApp resource and follows CRD changes",
        ("apiextensions.k8s.io",),
        ("customresourcedefinitions",),
        ("list", "watch"),
    ),
)

NAMESPACE_RULES: tuple[Rule, ...] = (
    Rule(
        "leader election: read and renew the one Lease",
        ("coordination.k8s.io",),
        ("leases",),
        ("get", "update"),
        (LEASE_NAME,),
    ),
    # `create` cannot be restricted by name (the object does not exist yet).
    Rule(
        "leader election: create the Lease once", ("coordination.k8s.io",), ("leases",), ("create",)
    ),
    Rule(
        "the registry the finalizer cleans up",
        ("",),
        ("configmaps",),
        ("get", "patch"),
        (REGISTRY_CONFIGMAP,),
    ),
    Rule("create the registry once", ("",), ("configmaps",), ("create",)),
)


def _labels() -> dict[str, str]:
    return {"app.kubernetes.io/name": "webapp-operator", "app.kubernetes.io/component": "rbac"}


def service_account(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": SERVICE_ACCOUNT, "namespace": namespace, "labels": _labels()},
    }


def cluster_role() -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": CLUSTER_ROLE, "labels": _labels()},
        "rules": [rule.to_json() for rule in CLUSTER_RULES],
    }


def cluster_role_binding(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": CLUSTER_ROLE, "labels": _labels()},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": CLUSTER_ROLE,
        },
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
    }


def namespace_role(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": NAMESPACE_ROLE, "namespace": namespace, "labels": _labels()},
        "rules": [rule.to_json() for rule in NAMESPACE_RULES],
    }


def namespace_role_binding(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": NAMESPACE_ROLE, "namespace": namespace, "labels": _labels()},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": NAMESPACE_ROLE,
        },
        "subjects": [{"kind": "ServiceAccount", "name": SERVICE_ACCOUNT, "namespace": namespace}],
    }


def rules_json(rules: tuple[Rule, ...]) -> list[dict[str, Any]]:
    return [rule.to_json() for rule in rules]
