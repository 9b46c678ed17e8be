"""Invalid WebApps are refused by the real API server, each layer with its own message:
the OpenAPI schema, the CEL rules, and the operator's validating webhook (called by the
kube-apiserver over TLS with the project's CA). Plus the scale subresource and printer
columns through the real kubectl."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import OperatorHandle, apply_webapp, stop_operator
from compare.cluster import ClusterTarget, tool_path
from compare.errors import CompareError
from compare.webapp import API_GROUP, API_VERSION, PLURAL
from tests.helpers import eventually, make_webapp

from .helpers import get_deployment, get_webapp

# The CRD comes with the operator: the schema and CEL cases need it too, when run alone.
pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator")]


def _create(api: client.ApiClient, namespace: str, name: str, spec: dict[str, Any]) -> str:
    """Create a raw CR (bypassing the client-side model); the API server's message."""
    body = {
        "apiVersion": "example.com/v1",
        "kind": "WebApp",
        "metadata": {"name": name},
        "spec": spec,
    }
    with pytest.raises(client.ApiException) as caught:
        client.CustomObjectsApi(api).create_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, body
        )
    message: str = json.loads(caught.value.body)["message"]
    return message


Cases = dict[str, tuple[dict[str, Any], str]]

SCHEMA: Cases = {
    "negative-replicas": (
        {"image": "a:v1", "replicas": -1},
        "spec.replicas in body should be greater than or equal to 0",
    ),
    "port-out-of-range": (
        {"image": "a:v1", "port": 70000},
        "spec.port in body should be less than or equal to 65535",
    ),
    "missing-image": ({"replicas": 1}, "spec.image: Required value"),
    "bad-env-name": (
        {"image": "a:v1", "env": [{"name": "1BAD"}]},
        "spec.env[0].name in body should match",
    ),
}
CEL: Cases = {
    "duplicate-env": (
        {"image": "a:v1", "env": [{"name": "A"}, {"name": "A", "value": "x"}]},
        "spec.env: Invalid value: env names must be unique",
    ),
    "limits-below-requests": (
        {"image": "a:v1", "resources": {"requests": {"cpu": "1"}, "limits": {"cpu": "500m"}}},
        "resources.limits.cpu must be >= resources.requests.cpu",
    ),
}
WEBHOOK: Cases = {
    "image-reference": (
        {"image": "Not An Image!!"},
        "spec.image: 'Not An Image!!' is not a valid image reference",
    ),
    "reserved-env": (
        {"image": "a:v1", "env": [{"name": "KUBERNETES_SERVICE_HOST", "value": "x"}]},
        "spec.env: 'KUBERNETES_SERVICE_HOST' is reserved by the platform",
    ),
    "replicas-ceiling": (
        {"image": "a:v1", "replicas": 51},
        "spec.replicas: 51 exceeds the ceiling",
    ),
}


@pytest.mark.parametrize("case", list(SCHEMA), ids=list(SCHEMA))
def test_schema_rejects(api: client.ApiClient, namespace: str, case: str) -> None:
    spec, expected = SCHEMA[case]
    assert expected in _create(api, namespace, "bad", spec)


@pytest.mark.parametrize("case", list(CEL), ids=list(CEL))
def test_cel_rejects(api: client.ApiClient, namespace: str, case: str) -> None:
    spec, expected = CEL[case]
    assert expected in _create(api, namespace, "bad", spec)


def test_cel_rejects_a_name_that_cannot_name_a_service(
    api: client.ApiClient, namespace: str
) -> None:
    message = _create(api, namespace, "1shop", {"image": "a:v1"})
    assert "metadata.name must be a DNS-1035 label" in message


@pytest.mark.parametrize("case", list(WEBHOOK), ids=list(WEBHOOK))
def test_webhook_rejects(
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    operator: OperatorHandle,
    case: str,
) -> None:
    if not cluster.embedded:
        pytest.skip("the webhook is registered on the embedded cluster only")
    spec, expected = WEBHOOK[case]
    message = _create(api, namespace, "bad", spec)
    assert 'admission webhook "validate.webapps.example.com" denied the request' in message
    assert f"WebApp {namespace}/bad: {expected}" in message


def test_webhook_judges_only_a_changed_spec(
    api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    apply_webapp(api, make_webapp("shop"), namespace)
    custom = client.CustomObjectsApi(api)
    # A metadata-only update is admitted whatever the policy says about the spec.
    custom.patch_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, "shop", {"metadata": {"labels": {"a": "b"}}}
    )
    with pytest.raises(client.ApiException) as caught:
        custom.patch_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, "shop", {"spec": {"image": "BAD IMAGE"}}
        )
    assert "spec.image: 'BAD IMAGE' is not a valid image reference" in caught.value.body


def test_rejection_is_one_line_through_the_python_api(
    api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    # The local model refuses limits below requests too; built past it (model_copy does not
    # validate), the server's CEL rule is what refuses it here.
    valid = make_webapp(
        "shop", resources={"requests": {"memory": "512Mi"}, "limits": {"memory": "1Gi"}}
    )
    resources = valid.spec.resources
    assert resources is not None
    swapped = resources.model_copy(
        update={"requests": resources.limits, "limits": resources.requests}
    )
    webapp = valid.model_copy(update={"spec": valid.spec.model_copy(update={"resources": swapped})})
    with pytest.raises(CompareError) as caught:
        apply_webapp(api, webapp, namespace)
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"WebApp {namespace}/shop rejected: ")
    assert "resources.limits.memory must be >= resources.requests.memory" in message


def _kubectl(cluster: ClusterTarget, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [tool_path("kubectl"), *cluster.kubectl_args(), *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_kubectl_scale_goes_through_the_scale_subresource(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    apply_webapp(api, make_webapp("shop", replicas=2), namespace)
    eventually(
        lambda: (
            ((get_webapp(api, namespace, "shop") or {}).get("status") or {}).get("phase")
            == "Running"
        ),
        what="Running",
    )

    scaled = _kubectl(cluster, "scale", "-n", namespace, "webapp/shop", "--replicas=5")
    assert scaled.returncode == 0, scaled.stderr
    assert (get_webapp(api, namespace, "shop") or {})["spec"]["replicas"] == 5
    eventually(
        lambda: (get_deployment(api, namespace, "shop") or {})["spec"]["replicas"] == 5,
        what="Deployment scaled to 5",
    )

    def scale_status() -> dict[str, Any] | None:
        scale = _kubectl(
            cluster,
            "get",
            "--raw",
            f"/apis/example.com/v1/namespaces/{namespace}/webapps/shop/scale",
        )
        data: dict[str, Any] = json.loads(scale.stdout)
        return data if data["status"].get("replicas") == 5 else None

    scale = eventually(scale_status, what="scale status 5")
    assert scale["status"]["selector"] == (
        "app.kubernetes.io/instance=shop,app.kubernetes.io/name=webapp"
    )

    if cluster.embedded:
        refused = _kubectl(cluster, "scale", "-n", namespace, "webapp/shop", "--replicas=500")
        assert refused.returncode != 0
        assert "spec.replicas: 500 exceeds the ceiling of 50" in refused.stderr
        assert (get_webapp(api, namespace, "shop") or {})["spec"]["replicas"] == 5


def test_printer_columns(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    apply_webapp(api, make_webapp("shop", replicas=2, image="shop:v3"), namespace)
    eventually(
        lambda: (
            ((get_webapp(api, namespace, "shop") or {}).get("status") or {}).get("readyReplicas")
            == 2
        ),
        what="2 ready",
    )
    listing = _kubectl(cluster, "get", "webapps", "-n", namespace)
    header, row = listing.stdout.splitlines()[:2]
    assert header.split() == ["NAME", "REPLICAS", "READY", "IMAGE", "PHASE", "AGE"]
    assert row.split()[:5] == ["shop", "2", "2", "shop:v3", "Running"]


def test_metadata_only_updates_never_reach_the_webhook(
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    operator: OperatorHandle,
    restore_operator: None,
) -> None:
    """With the webhook down (failurePolicy Fail), a label or finalizer change of a WebApp is
    still admitted — the API server does not call the webhook when the spec is unchanged —
    while a spec change is refused. (kopf's own metadata patches must not wait on it.)"""
    apply_webapp(api, make_webapp("meta", replicas=1), namespace)
    stop_operator(cluster)
    custom = client.CustomObjectsApi(api)

    def patch(body: dict[str, Any]) -> None:
        custom.patch_namespaced_custom_object(
            API_GROUP,
            API_VERSION,
            namespace,
            PLURAL,
            "meta",
            body,
            _content_type="application/merge-patch+json",
        )

    patch({"metadata": {"labels": {"team": "blue"}}})
    with pytest.raises(client.ApiException) as refused:
        patch({"spec": {"replicas": 2}})
    assert refused.value.status == 500 and "failed calling webhook" in str(refused.value.body)
    body = get_webapp(api, namespace, "meta")
    assert body is not None and body["metadata"]["labels"]["team"] == "blue"
    assert body["spec"]["replicas"] == 1
