"""Shared by the test packages: WebApps to deploy (and deploying one with Helm), reading their
pods, polling with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, TypeVar

from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.helm import HelmRelease
from compare.deploy.helm_arm import deploy_target
from compare.target import builtin_target
from compare.webapp import WebApp, parse_webapp

T = TypeVar("T")
POLL_S = 0.05


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


def eventually(
    probe: Callable[[], T | None],
    *,
    timeout: float = 30.0,
    what: str = "condition",
) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


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
