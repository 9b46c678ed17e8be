"""The drift actions that choose what they write (compare.chaos.choices), against the API
server: an absent CPU request, readiness probe or pod-template label is set or added, a
present one gets a value other than its own, and the API server accepts each (a request never
above the limit, a probe with a handler)."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from compare.chaos.actions import set_cpu_request, set_readiness_probe, set_template_label
from compare.chaos.cluster import trial_secrets
from compare.cluster import ClusterTarget

pytestmark = pytest.mark.cluster
LABEL = "app.kubernetes.io/component"


def _deployment(ns: str, api: client.ApiClient, container: dict[str, Any]) -> str:
    labels = {"app": "plain"}
    body = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "plain", "namespace": ns},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": labels},
            "template": {"metadata": {"labels": labels}, "spec": {"containers": [container]}},
        },
    }
    client.AppsV1Api(api).create_namespaced_deployment(ns, body)
    return "plain"


def test_absent_fields_are_set_or_added(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    secrets = trial_secrets(cluster)
    # No port, no resources but a CPU limit under the asked-for request, no probe, no label.
    app = {"name": "app", "image": "app:1", "resources": {"limits": {"cpu": "200m"}}}
    name = _deployment(namespace, api, app)
    cpu = set_cpu_request(name, namespace, container="app", secrets=secrets)
    assert cpu["value"] == "100m"  # 250m is above the limit: the API server would refuse it
    probe = set_readiness_probe(name, namespace, container="app", secrets=secrets)
    assert probe["value"] == 30
    label = set_template_label(name, namespace, secrets=secrets)
    assert label["value"] == "chaos"
    live = client.AppsV1Api(api).read_namespaced_deployment(name, namespace)
    container = live.spec.template.spec.containers[0]
    assert container.resources.requests == {"cpu": "100m"}
    assert container.readiness_probe._exec.command == ["true"]  # no port to check
    assert live.spec.template.metadata.labels[LABEL] == "chaos"

    # Present now: each changed to a value other than its own.
    assert set_cpu_request(name, namespace, cpu="100m", container="app", secrets=secrets)[
        "value"
    ] == "10m"  # fmt: skip
    assert set_readiness_probe(name, namespace, container="app", secrets=secrets)["value"] == 15
    assert set_template_label(name, namespace, secrets=secrets)["value"] == "chaos-other"


def test_an_added_probe_checks_the_first_port(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    app = {"name": "app", "image": "app:1", "ports": [{"name": "web", "containerPort": 8080}]}
    name = _deployment(namespace, api, app)
    result = set_readiness_probe(name, namespace, container="app", secrets=trial_secrets(cluster))
    assert (
        result["field"]
        == "deployment.spec.template.spec.containers[app].readinessProbe.periodSeconds"
    )
    live = client.AppsV1Api(api).read_namespaced_deployment(name, namespace)
    probe = live.spec.template.spec.containers[0].readiness_probe
    assert probe.tcp_socket.port == "web" and probe.period_seconds == 30
    # The API server's defaults for the rest.
    assert probe.timeout_seconds == 1 and probe.failure_threshold == 3
