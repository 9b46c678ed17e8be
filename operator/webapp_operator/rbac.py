"""Least-privilege RBAC: exactly the verbs and resources the operator (and kopf) use.

Three identities, each with only what its process calls (every rule carries its reason into
the generated YAML):

* the manager (ServiceAccount `webapp-operator`): the WebApps and their children in the
  watched namespaces (RESOURCE_RULES), kopf's CRD observer (CRD_RULES) and, in its own
  namespace only, the leader-election Lease and the registry ConfigMap, pinned by name where
  the API allows it (NAMESPACE_RULES). Watching every namespace, RESOURCE_RULES and CRD_RULES
  form one ClusterRole (CLUSTER_RULES); watching given namespaces, RESOURCE_RULES become a
  Role in each of them and only what is cluster-scoped by nature stays in a ClusterRole
  (SCOPED_CLUSTER_RULES: the CRDs, and the namespaces kopf observes in that mode);
* the webhook (ServiceAccount `webapp-operator-webhook`, `--webhook-only`): it answers
  AdmissionReviews and calls no API of its own; kopf, in that mode, still discovers the
  WebApp resource and follows CRD changes (WEBHOOK_RULES = CRD_RULES). Without them kopf
  retries the CRD listing for about a minute, logging an error per attempt;
* nobody gets Secrets or writes to a WebApp's spec, and the manager deletes only what no
  patch can heal (a child whose immutable field differs, a pod changed in place): tests
  check it against a live API server with SelfSubjectRulesReviews.

The generator writes these to operator/config/rbac/ and the operator chart's rules files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from webapp_operator.names import (
    API_GROUP,
    CLUSTER_ROLE,
    LEASE_NAME,
    NAMESPACE_ROLE,
    OPERATOR_NAME,
    OPERATOR_NAMESPACE,
    PLURAL,
    REGISTRY_CONFIGMAP,
    SERVICE_ACCOUNT,
)

__all__ = [
    "CLUSTER_RULES",
    "CRD_RULES",
    "NAMESPACE_OBSERVER_RULES",
    "NAMESPACE_RULES",
    "RESOURCE_RULES",
    "SCOPED_CLUSTER_RULES",
    "WEBHOOK_CLUSTER_ROLE",
    "WEBHOOK_RULES",
    "WEBHOOK_SERVICE_ACCOUNT",
    "Rule",
    "cluster_role",
    "cluster_role_binding",
    "namespace_role",
    "namespace_role_binding",
    "rules_json",
    "service_account",
    "webhook_cluster_role",
    "webhook_cluster_role_binding",
    "webhook_service_account",
]

# The webhook Deployment's own identity (config/webhook/server.yaml, the chart's
# `<release>-webapp-operator-webhook`): never the manager's.
WEBHOOK_SERVICE_ACCOUNT: Final = f"{OPERATOR_NAME}-webhook"
WEBHOOK_CLUSTER_ROLE: Final = WEBHOOK_SERVICE_ACCOUNT


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


# In every watched namespace (a ClusterRole when that is all of them, else a Role in each).
RESOURCE_RULES: tuple[Rule, ...] = (
    Rule(
        "kopf lists and watches WebApps and patches their finalizer and its bookkeeping "
        "annotations; the reconcile reads them from the watch (no get), never writes the spec",
        (API_GROUP,),
        (PLURAL,),
        ("list", "watch", "patch"),
    ),
    Rule("write the observed state", (API_GROUP,), (f"{PLURAL}/status",), ("patch",)),
    Rule(
        "owner references with blockOwnerDeletion need update on the owner's finalizers",
        (API_GROUP,),
        (f"{PLURAL}/finalizers",),
        ("update",),
    ),
    Rule(
        "the children: watch every event (label-selected); create when absent and for the "
        "server-side dry-run that gives the desired object its defaults; heal by JSON patch; "
        "delete (uid precondition) and create again only when an immutable field differs "
        "(a Deployment's selector); the garbage collector deletes them with their WebApp",
        ("apps",),
        ("deployments",),
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    Rule(
        "the children, as above (a Service's clusterIP is immutable)",
        ("",),
        ("services",),
        ("get", "list", "watch", "create", "patch", "delete"),
    ),
    Rule(
        "a WebApp's pods (label-selected watch): one changed in place is deleted (uid "
        "precondition) so that its ReplicaSet replaces it",
        ("",),
        ("pods",),
        ("list", "watch", "delete"),
    ),
    Rule(
        "a pod changed in place that a PodDisruptionBudget selects is evicted instead",
        ("",),
        ("pods/eviction",),
        ("create",),
    ),
    Rule(
        "the ReplicaSet of a pod changed in place: the template it is judged against",
        ("apps",),
        ("replicasets",),
        ("get",),
    ),
    Rule(
        "whether a PodDisruptionBudget selects a pod about to be replaced",
        ("policy",),
        ("poddisruptionbudgets",),
        ("list",),
    ),
    Rule(
        "Created / DriftCorrected / Updated / CleanedUp and Warning events on WebApps",
        ("",),
        ("events",),
        ("create",),
    ),
)

# Cluster-scoped by nature.
CRD_RULES: tuple[Rule, ...] = (
    Rule(
        "kopf discovers the WebApp resource and follows CRD changes",
        ("apiextensions.k8s.io",),
        ("customresourcedefinitions",),
        ("list", "watch"),
    ),
)
NAMESPACE_OBSERVER_RULES: tuple[Rule, ...] = (
    Rule(
        "kopf observes the namespaces it watches when not watching all of them; without this "
        "it retries the listing for about a minute before it starts watching",
        ("",),
        ("namespaces",),
        ("list", "watch"),
    ),
)

CLUSTER_RULES: tuple[Rule, ...] = RESOURCE_RULES + CRD_RULES
SCOPED_CLUSTER_RULES: tuple[Rule, ...] = CRD_RULES + NAMESPACE_OBSERVER_RULES
WEBHOOK_RULES: tuple[Rule, ...] = CRD_RULES

# In the operator's own namespace.
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


def _metadata(name: str, namespace: str | None) -> dict[str, Any]:
    """Name, namespace (none for a cluster-scoped object) and the RBAC objects' labels."""
    meta: dict[str, Any] = {"name": name}
    if namespace is not None:
        meta["namespace"] = namespace
    meta["labels"] = {
        "app.kubernetes.io/name": "webapp-operator",
        "app.kubernetes.io/component": "rbac",
    }
    return meta


def _service_account(name: str, namespace: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": _metadata(name, namespace)}


def _role(kind: str, name: str, rules: tuple[Rule, ...], namespace: str | None) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": kind,
        "metadata": _metadata(name, namespace),
        "rules": rules_json(rules),
    }


def _binding(
    kind: str, name: str, subject: str, subject_namespace: str, namespace: str | None
) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": f"{kind}Binding",
        "metadata": _metadata(name, namespace),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": subject, "namespace": subject_namespace}],
    }


def service_account(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    """The manager's identity."""
    return _service_account(SERVICE_ACCOUNT, namespace)


def cluster_role() -> dict[str, Any]:
    """The manager's ClusterRole when it watches every namespace (config/rbac)."""
    return _role("ClusterRole", CLUSTER_ROLE, CLUSTER_RULES, None)


def cluster_role_binding(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    return _binding("ClusterRole", CLUSTER_ROLE, SERVICE_ACCOUNT, namespace, None)


def namespace_role(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    """The Lease and the registry, in the operator's namespace."""
    return _role("Role", NAMESPACE_ROLE, NAMESPACE_RULES, namespace)


def namespace_role_binding(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    return _binding("Role", NAMESPACE_ROLE, SERVICE_ACCOUNT, namespace, namespace)


def webhook_service_account(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    """The webhook Deployment's identity."""
    return _service_account(WEBHOOK_SERVICE_ACCOUNT, namespace)


def webhook_cluster_role() -> dict[str, Any]:
    return _role("ClusterRole", WEBHOOK_CLUSTER_ROLE, WEBHOOK_RULES, None)


def webhook_cluster_role_binding(namespace: str = OPERATOR_NAMESPACE) -> dict[str, Any]:
    return _binding("ClusterRole", WEBHOOK_CLUSTER_ROLE, WEBHOOK_SERVICE_ACCOUNT, namespace, None)


def rules_json(rules: tuple[Rule, ...]) -> list[dict[str, Any]]:
    return [rule.to_json() for rule in rules]
