"""Helpers shared by the Helm tests: WebApps to deploy and reading what runs."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.helm import HelmRelease
from compare.deploy.target_helm import deploy_target
from compare.target import builtin_target
from compare.webapp import WebApp, parse_webapp


def make_webapp(name: str = "shop", **spec: Any) -> WebApp:
    body = {"replicas": 2, "image": "shop:v1", "port": 8080, **spec}
    return parse_webapp(
        {"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": {"name": name}, "spec": body}
    )


def pods_of(api: client.ApiClient, namespace: str, instance: str) -> list[Any]:
    """Pods of one release that are not being deleted."""
    pods = client.CoreV1Api(api).list_namespaced_pod(
        namespace,
        label_selector=f"app.kubernetes.io/name=webapp,app.kubernetes.io/instance={instance}",
    )
    return [p for p in pods.items if p.metadata.deletion_timestamp is None]


def is_ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def deploy_webapp(
    cluster: ClusterTarget,
    webapp: WebApp,
    namespace: str,
    *,
    release: str | None = None,
    timeout: float = 60,
    extra_values: dict[str, Any] | None = None,
) -> HelmRelease:
    """The built-in WebApp deployed by Helm as the target it is (`builtin_target`), through the
    helm arm's one deploy path; the release it made."""
    target = builtin_target(webapp, release=release, extra_values=extra_values)
    assert target.helm is not None
    deployed, _ = deploy_target(cluster, target, target.helm, namespace, timeout=timeout)
    return deployed
