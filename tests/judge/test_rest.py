"""Requests by path (`compare.judge.rest`): the paths, the answers and the errors, against the
real API server, next to what the typed client does for the same request."""

from __future__ import annotations

import pytest
from kubernetes import client

from compare.judge.kinds import KINDS, kind
from compare.judge.rest import request, resource_path

TIMEOUT = (3.0, 10.0)


def test_paths_of_the_core_group_named_groups_and_cluster_scope() -> None:
    assert resource_path("v1", "services", "shop", "web") == "/api/v1/namespaces/shop/services/web"
    assert (
        resource_path("apps/v1", "deployments", "shop")
        == "/apis/apps/v1/namespaces/shop/deployments"
    )
    assert (
        resource_path("example.com/v1", "webapps", "shop", "web", "status")
        == "/apis/example.com/v1/namespaces/shop/webapps/web/status"
    )
    assert (
        kind("ClusterRole").path("ignored", "view")
        == "/apis/rbac.authorization.k8s.io/v1/clusterroles/view"
    )
    assert kind("Ingress").resource == "ingresses"
    assert kind("NetworkPolicy").resource == "networkpolicies"
    assert kind("ReplicaSet").resource == "replicasets"


@pytest.mark.cluster
def test_every_judged_kind_is_served_at_its_path(api: client.ApiClient) -> None:
    """The API server's own discovery names each kind's group/version and resource."""
    served: dict[str, dict[str, str]] = {}
    for group_version in {row.group_version for row in KINDS.values()}:
        root = f"/apis/{group_version}" if "/" in group_version else f"/api/{group_version}"
        listing = request(api, "GET", root, timeout=TIMEOUT)
        served[group_version] = {r["name"]: r["kind"] for r in listing["resources"]}
        namespaced = {r["name"]: r["namespaced"] for r in listing["resources"]}
        for row in (r for r in KINDS.values() if r.group_version == group_version):
            assert served[group_version].get(row.resource) == row.kind, row
            assert namespaced[row.resource] == row.namespaced, row


@pytest.mark.cluster
def test_answers_and_errors_are_those_of_the_typed_client(
    api: client.ApiClient, namespace: str
) -> None:
    configmaps = kind("ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "1"}}
    created = request(
        api,
        "POST",
        configmaps.path(namespace),
        query={"fieldManager": "t"},
        body=body,
        timeout=TIMEOUT,
    )
    typed = client.CoreV1Api(api).read_namespaced_config_map("c", namespace)
    assert created["metadata"]["uid"] == typed.metadata.uid
    assert created["metadata"]["managedFields"][0]["manager"] == "t"
    patched = request(
        api,
        "PATCH",
        configmaps.path(namespace, "c"),
        body={"data": {"a": "2"}},
        content_type="application/merge-patch+json",
        timeout=TIMEOUT,
    )
    assert patched["data"] == {"a": "2"}
    with pytest.raises(client.ApiException) as refused:
        request(api, "POST", configmaps.path(namespace), body=body, timeout=TIMEOUT)
    with pytest.raises(client.ApiException) as typed_refused:
        client.CoreV1Api(api).create_namespaced_config_map(namespace, body)
    assert (refused.value.status, refused.value.reason) == (409, typed_refused.value.reason)
    assert '"reason":"AlreadyExists"' in refused.value.body
    request(api, "DELETE", configmaps.path(namespace, "c"), timeout=TIMEOUT)
    with pytest.raises(client.ApiException) as gone:
        request(api, "GET", configmaps.path(namespace, "c"), timeout=TIMEOUT)
    assert gone.value.status == 404


def test_an_unreachable_server_is_a_transport_error_as_with_the_typed_client() -> None:
    configuration = client.Configuration(host="http://127.0.0.1:9")
    configuration.retries = False
    api = client.ApiClient(configuration)
    with pytest.raises(Exception) as raised:
        request(api, "GET", "/api/v1/namespaces", timeout=1.0)
    assert not isinstance(raised.value, client.ApiException)
    assert isinstance(raised.value, OSError) or "urllib3" in type(raised.value).__module__
