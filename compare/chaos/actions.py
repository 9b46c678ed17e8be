"""Actions chaostoolkit-kubernetes lacks: drift of the WebApp's Deployment and Service, and
stopping/starting the operator.

Each drift action patches one owned field and returns what the API server stored, as
`{"object", "name", "uid", "field", "value"}`: the field's value right after the injection
(the evidence's `during`), even when a controller reverts it a moment later. Deletions, pod
terminations and scaling use chaosk8s's own actions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare.chaos.cluster import api_client, cluster_target
from compare.chaos.fields import read_path
from compare.deploy import operator as operator_path
from compare.errors import CompareError
from compare.webapp import CONTAINER_NAME, PORT_NAME

__all__ = [
    "add_env_var",
    "add_sidecar_container",
    "set_container_image",
    "set_service_port",
    "set_service_selector",
    "set_template_label",
    "start_operator",
    "stop_operator",
]


def _drift(
    kind: str,
    name: str,
    ns: str,
    field: str,
    patch: Callable[[client.ApiClient], Any],
    secrets: Any,
) -> dict[str, Any]:
    api = api_client(secrets)
    try:
        stored = api.sanitize_for_serialization(patch(api))
    except client.ApiException as exc:
        raise ActivityFailed(
            f"patching {kind} {ns}/{name} failed: {exc.status} {exc.reason}"
        ) from exc
    finally:
        api.close()
    return {
        "object": kind,
        "name": name,
        "uid": stored["metadata"]["uid"],
        "field": field,
        "value": read_path(field, {kind: stored}),
    }


def _patch_deployment(
    name: str, ns: str, field: str, body: dict[str, Any], secrets: Any
) -> dict[str, Any]:
    """A strategic-merge patch of Deployment `name` as a drift of `field`."""
    return _drift(
        "deployment",
        name,
        ns,
        field,
        lambda api: client.AppsV1Api(api).patch_namespaced_deployment(name, ns, body),
        secrets,
    )


def set_container_image(
    name: str,
    ns: str = "default",
    image: str = "myapp:chaos",
    container: str = CONTAINER_NAME,
    secrets: Any = None,
) -> dict[str, Any]:
    """Change the image of one container of Deployment `name` (a strategic merge patch)."""
    field = f"deployment.spec.template.spec.containers[{container}].image"
    body = {"spec": {"template": {"spec": {"containers": [{"name": container, "image": image}]}}}}
    return _patch_deployment(name, ns, field, body, secrets)


def add_env_var(
    name: str,
    ns: str = "default",
    env_name: str = "CHAOS_INJECTED",
    env_value: str = "1",
    container: str = CONTAINER_NAME,
    secrets: Any = None,
) -> dict[str, Any]:
    """Add an environment variable to one container (env merges by name: it is appended)."""
    field = f"deployment.spec.template.spec.containers[{container}].env"
    env = [{"name": env_name, "value": env_value}]
    body = {"spec": {"template": {"spec": {"containers": [{"name": container, "env": env}]}}}}
    return _patch_deployment(name, ns, field, body, secrets)


def set_template_label(
    name: str,
    ns: str = "default",
    key: str = "app.kubernetes.io/component",
    value: str = "chaos",
    secrets: Any = None,
) -> dict[str, Any]:
    """Set a pod-template label of Deployment `name` (not a selector label: that is immutable)."""
    field = f"deployment.spec.template.metadata.labels[{key}]"
    body = {"spec": {"template": {"metadata": {"labels": {key: value}}}}}
    return _patch_deployment(name, ns, field, body, secrets)


def add_sidecar_container(
    name: str,
    ns: str = "default",
    container: str = "chaos-sidecar",
    image: str = "busybox:1.36",
    secrets: Any = None,
) -> dict[str, Any]:
    """Add a sidecar container to Deployment `name`'s pod template."""
    field = "deployment.spec.template.spec.containers[*].name"
    sidecar = {"name": container, "image": image, "command": ["sleep", "infinity"]}
    body = {"spec": {"template": {"spec": {"containers": [sidecar]}}}}
    return _patch_deployment(name, ns, field, body, secrets)


def set_service_port(
    name: str,
    ns: str = "default",
    port: int = 9999,
    port_name: str = PORT_NAME,
    secrets: Any = None,
) -> dict[str, Any]:
    """Change the `port` of Service `name`'s port named `port_name`.

    A JSON patch: a strategic merge keyed on `port` would add a second port instead.
    """
    field = f"service.spec.ports[{port_name}].port"

    def patch(api: client.ApiClient) -> Any:
        core = client.CoreV1Api(api)
        ports = core.read_namespaced_service(name, ns).spec.ports or []
        index = next((i for i, p in enumerate(ports) if p.name == port_name), None)
        if index is None:
            raise ActivityFailed(f"service {ns}/{name} has no port named {port_name!r}")
        body = [{"op": "replace", "path": f"/spec/ports/{index}/port", "value": int(port)}]
        return core.patch_namespaced_service(name, ns, body)

    return _drift("service", name, ns, field, patch, secrets)


def set_service_selector(
    name: str,
    ns: str = "default",
    selector: dict[str, str] | None = None,
    secrets: Any = None,
) -> dict[str, Any]:
    """Replace Service `name`'s selector, so it selects other (or no) pods."""
    new = selector or {"app.kubernetes.io/instance": "chaos-nowhere"}
    body = [{"op": "replace", "path": "/spec/selector", "value": dict(new)}]
    return _drift(
        "service",
        name,
        ns,
        "service.spec.selector",
        lambda api: client.CoreV1Api(api).patch_namespaced_service(name, ns, body),
        secrets,
    )


def stop_operator(kill: bool = False, secrets: Any = None) -> dict[str, Any]:
    """Stop the shared WebApp operator: SIGTERM (graceful), or SIGKILL with `kill`.

    Nothing reconciles WebApps until `start_operator`; do not delete a namespace holding a
    WebApp meanwhile (its finalizer needs the operator).
    """
    try:
        operator_path.stop_operator(cluster_target(secrets), kill=bool(kill))
    except CompareError as exc:
        raise ActivityFailed(exc.message) from exc
    return {"operator": "stopped", "signal": "SIGKILL" if kill else "SIGTERM"}


def start_operator(secrets: Any = None) -> dict[str, Any]:
    """Start the shared WebApp operator again (nothing happens when it runs already)."""
    try:
        operator_path.start_operator(cluster_target(secrets))
    except CompareError as exc:
        raise ActivityFailed(exc.message) from exc
    return {"operator": "running"}
