"""Actions chaostoolkit-kubernetes lacks: drift of the WebApp's Deployment and Service, and
stopping/starting the operator.

Each drift action patches one owned field and returns what the API server stored, as
`{"object", "name", "uid", "field", "value"}`: the field's value right after the injection
(the evidence's `during`), even when a controller reverts it a moment later. `patch_object` is
the generic one: any patch of the Deployment or the Service, with the field to report named by
the experiment. Deletions, pod terminations and scaling use chaosk8s's own actions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare.chaos.cluster import api_client, cluster_target
from compare.chaos.fields import parse_path, read_path
from compare.cluster import status_message
from compare.deploy import operator as operator_path
from compare.errors import CompareError
from compare.webapp import CONTAINER_NAME, PORT_NAME

__all__ = [
    "add_env_var",
    "add_sidecar_container",
    "patch_object",
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
        raise ActivityFailed(f"patching {kind} {ns}/{name} failed: {_api_message(exc)}") from exc
    finally:
        api.close()
    return {
        "object": kind,
        "name": name,
        "uid": stored["metadata"]["uid"],
        "field": field,
        "value": read_path(field, {kind: stored}),
    }


def _api_message(exc: client.ApiException) -> str:
    """The status code and the API server's own message (its Status), on one line."""
    return " ".join(f"{exc.status} {status_message(exc) or exc.reason or ''}".split())


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


PATCH_KINDS = ("deployment", "service")
PATCH_CONTENT_TYPES = {
    "strategic": "application/strategic-merge-patch+json",
    "merge": "application/merge-patch+json",
    "json": "application/json-patch+json",
}


def patch_object(
    kind: str,
    name: str,
    patch: dict[str, Any] | list[dict[str, Any]],
    field: str,
    ns: str = "default",
    patch_type: str = "",
    secrets: Any = None,
) -> dict[str, Any]:
    """Patch the WebApp's Deployment or Service (`kind`) with any `patch`; report `field`.

    `patch` is a JSON patch (a list of operations: `remove` takes a field away, `test` guards
    an index) or a strategic-merge / merge patch (a mapping). `patch_type` is `json`,
    `strategic` or `merge`; empty means `json` for a list and `strategic` for a mapping.
    `field` is the path (compare.chaos.fields, starting with `kind`) whose stored value the
    action returns, in the object the API server answered with. A patch the API server rejects
    raises ActivityFailed naming the object and the API's message.
    """
    kind, content_type = _patch_arguments(kind, patch, field, patch_type)

    def send(api: client.ApiClient) -> Any:
        if kind == "deployment":
            return client.AppsV1Api(api).patch_namespaced_deployment(
                name, ns, patch, _content_type=content_type
            )
        return client.CoreV1Api(api).patch_namespaced_service(
            name, ns, patch, _content_type=content_type
        )

    return _drift(kind, name, ns, field, send, secrets)


def _patch_arguments(kind: str, patch: Any, field: str, patch_type: str) -> tuple[str, str]:
    """Check `patch_object`'s arguments before anything is sent: (kind, content type)."""
    kind, patch_type = str(kind).lower(), str(patch_type or "").lower()
    if kind not in PATCH_KINDS:
        raise ActivityFailed(
            f"patch_object: kind must be one of {', '.join(PATCH_KINDS)}, got {kind!r}"
        )
    if patch_type and patch_type not in PATCH_CONTENT_TYPES:
        raise ActivityFailed(
            f"patch_object: patch_type must be one of {', '.join(PATCH_CONTENT_TYPES)},"
            f" got {patch_type!r}"
        )
    if isinstance(patch, list):
        wanted = patch_type or "json"
        allowed: tuple[str, ...] = ("json",)
        if not patch or not all(
            isinstance(op, dict) and "op" in op and "path" in op for op in patch
        ):
            raise ActivityFailed(
                "patch_object: a JSON patch is a non-empty list of operations with `op` and `path`"
            )
    elif isinstance(patch, dict):
        wanted = patch_type or "strategic"
        allowed = ("strategic", "merge")
        if not patch:
            raise ActivityFailed("patch_object: the patch is empty")
    else:
        raise ActivityFailed(
            "patch_object: patch must be a list (JSON patch) or a mapping,"
            f" got {type(patch).__name__}"
        )
    if wanted not in allowed:
        shape = "a list" if isinstance(patch, list) else "a mapping"
        raise ActivityFailed(
            f"patch_object: patch_type {wanted!r} does not fit {shape} (use {' or '.join(allowed)})"
        )
    try:
        root = parse_path(str(field))[0]
    except CompareError as exc:
        raise ActivityFailed(f"patch_object: {exc.message}") from exc
    if root != kind:
        raise ActivityFailed(f"patch_object: field {field!r} must start with {kind!r}")
    return kind, PATCH_CONTENT_TYPES[wanted]


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
