"""The operator runs under its ServiceAccount with the least-privilege RBAC of config/rbac:
it works (every behaviour test runs against this very process) and is Forbidden elsewhere."""

from __future__ import annotations

from pathlib import Path

import pytest
from kubernetes import client, config

from compare.approaches.operator.controllers import OperatorHandle, operator_status
from compare.cluster import ClusterTarget
from webapp_operator.names import LEASE_NAME, OPERATOR_NAMESPACE, REGISTRY_CONFIGMAP

pytestmark = pytest.mark.cluster

SA_USER = "system:serviceaccount:webapp-system:webapp-operator"


def _operator_kubeconfig(cluster: ClusterTarget) -> Path:
    """The kubeconfig the running operator process was started with."""
    status = operator_status(cluster)
    assert status is not None and status.running and status.pid is not None
    cmdline = Path(f"/proc/{status.pid}/cmdline").read_bytes().split(b"\0")
    flags = [arg.decode() for arg in cmdline if arg.startswith(b"--kubeconfig=")]
    assert flags, "the operator runs without an explicit kubeconfig"
    return Path(flags[0].split("=", 1)[1])


def _allowed(api: client.ApiClient, **attributes: str) -> bool:
    review = client.AuthorizationV1Api(api).create_self_subject_access_review(
        {
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attributes},
        }
    )
    return bool(review.status.allowed)


def test_operator_process_uses_the_service_account_token(
    cluster: ClusterTarget, operator: OperatorHandle
) -> None:
    path = _operator_kubeconfig(cluster)
    assert path.parent == operator.state_dir
    assert path.stat().st_mode & 0o777 == 0o600
    api = config.new_client_from_config(config_file=str(path))
    try:
        review = client.AuthenticationV1Api(api).create_self_subject_review(
            {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}
        )
        assert review.status.user_info.username == SA_USER

        # Works: what the operator does.
        client.AppsV1Api(api).list_deployment_for_all_namespaces(limit=1)
        client.CustomObjectsApi(api).list_cluster_custom_object("example.com", "v1", "webapps")
        client.CoreV1Api(api).list_namespaced_pod("default", limit=1)  # changed in place
        # Forbidden: what it never needs.
        for call, args in (
            (client.CoreV1Api(api).list_secret_for_all_namespaces, ()),
            (client.CoreV1Api(api).list_namespaced_secret, (OPERATOR_NAMESPACE,)),
            (client.CoreV1Api(api).list_namespaced_config_map, ("default",)),
        ):
            with pytest.raises(client.ApiException) as caught:
                call(*args)
            assert caught.value.status == 403
    finally:
        api.close()


def test_rbac_is_least_privilege(cluster: ClusterTarget, operator: OperatorHandle) -> None:
    api = config.new_client_from_config(config_file=str(_operator_kubeconfig(cluster)))
    try:
        allowed = {
            "patch deployments (the healing patch)": dict(
                verb="patch", group="apps", resource="deployments"
            ),
            "patch services (the healing patch)": dict(verb="patch", resource="services"),
            "create services (and dry-run creates)": dict(verb="create", resource="services"),
            "watch services": dict(verb="watch", resource="services"),
            "patch webapps/status": dict(
                verb="patch", group="example.com", resource="webapps", subresource="status"
            ),
            "create events": dict(verb="create", resource="events", namespace="default"),
            "delete deployments (an immutable field differs)": dict(
                verb="delete", group="apps", resource="deployments"
            ),
            "delete pods (changed in place)": dict(verb="delete", resource="pods"),
            "evict pods (a PodDisruptionBudget selects them)": dict(
                verb="create", resource="pods", subresource="eviction"
            ),
            "update the lease": dict(
                verb="update",
                group="coordination.k8s.io",
                resource="leases",
                namespace=OPERATOR_NAMESPACE,
                name=LEASE_NAME,
            ),
            "patch the registry": dict(
                verb="patch",
                resource="configmaps",
                namespace=OPERATOR_NAMESPACE,
                name=REGISTRY_CONFIGMAP,
            ),
        }
        denied = {
            "delete replicasets (the garbage collector does)": dict(
                verb="delete", group="apps", resource="replicasets"
            ),
            "update pods (replaced, never changed)": dict(verb="update", resource="pods"),
            "update deployments (healed by a patch)": dict(
                verb="update", group="apps", resource="deployments"
            ),
            "update services (healed by a patch)": dict(verb="update", resource="services"),
            "get a webapp (the watch holds them)": dict(
                verb="get", group="example.com", resource="webapps"
            ),
            "read namespaces (kopf does not, watching all of them)": dict(
                verb="list", resource="namespaces"
            ),
            "get secrets": dict(verb="get", resource="secrets"),
            "update webapps (spec belongs to users)": dict(
                verb="update", group="example.com", resource="webapps"
            ),
            "another lease": dict(
                verb="update",
                group="coordination.k8s.io",
                resource="leases",
                namespace=OPERATOR_NAMESPACE,
                name="someone-else",
            ),
            "another configmap": dict(
                verb="patch", resource="configmaps", namespace=OPERATOR_NAMESPACE, name="other"
            ),
            "leases outside its namespace": dict(
                verb="create", group="coordination.k8s.io", resource="leases", namespace="default"
            ),
        }
        for what, attrs in allowed.items():
            assert _allowed(api, **attrs), f"should be allowed: {what}"
        for what, attrs in denied.items():
            assert not _allowed(api, **attrs), f"should be denied: {what}"
    finally:
        api.close()
