"""Actions chaostoolkit-kubernetes lacks: drift of the app's workload (a Deployment,
StatefulSet or DaemonSet: `kind`), Service, ConfigMap, Secret and RBAC bindings, deleting them,
and stopping/starting the trial's approach's local controllers (the operator), found through
the approaches' registry (`Approach.controllers`).

Each drift action patches one owned field and returns what the API server stored, as
`{"object", "name", "uid", "field", "value"}`: the field's value right after the injection
(the evidence's `during`), even when a controller reverts it a moment later. A Secret's values
are returned as their hashes (`compare.judge.secrets`): the journal never holds one.
`patch_object` is the generic one: any patch of any of those objects, with the field to
report named by the experiment. Pod terminations and scaling use chaosk8s's own actions.
`add_endpoint_slice` adds an object instead: an EndpointSlice of someone else's for the
Service (`compare.judge.endpoints`).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare import approaches
from compare.chaos import choices, shared
from compare.chaos.cluster import api_client, cluster_target
from compare.chaos.fields import parse_path, read_path
from compare.deploy.chart_target import is_target_file
from compare.errors import CompareError
from compare.judge.allow import without_allocated
from compare.judge.endpoints import SERVICE_NAME
from compare.judge.kinds import KINDS, PART_KINDS, REQUEST_TIMEOUT, WORKLOAD_KINDS, pod_template
from compare.judge.secrets import hashed_secret
from compare.kube import status_message, wait_for
from compare.webapp import CONTAINER_NAME

__all__ = [
    "add_endpoint_slice",
    "add_env_var",
    "add_sidecar_container",
    "change_data",
    "delete_object",
    "delete_statefulset_pod",
    "patch_object",
    "recreate_object",
    "set_container_image",
    "set_cpu_request",
    "set_pod_image",
    "set_readiness_probe",
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
    with _api(secrets, f"patching {kind} {ns}/{name}") as api:
        stored = api.sanitize_for_serialization(patch(api))
    stored = hashed_secret(stored) if kind == "secret" else stored
    return {
        "object": kind,
        "name": name,
        "uid": stored["metadata"]["uid"],
        "field": field,
        "value": read_path(field, {kind: stored}),
    }


@contextmanager
def _api(secrets: Any, doing: str) -> Iterator[client.ApiClient]:
    """An API client for the activity, closed after; a failed call is an ActivityFailed
    naming what it was `doing`, with the status code and the API server's own message (its
    Status) on one line."""
    api = api_client(secrets)
    try:
        yield api
    except client.ApiException as exc:
        message = " ".join(f"{exc.status} {status_message(exc) or exc.reason or ''}".split())
        raise ActivityFailed(f"{doing} failed: {message}") from exc
    finally:
        api.close()


# Field-path roots (`compare.chaos.fields`) -> the judge's kinds, for the generic calls.
OBJECT_KINDS = {kind.lower(): kind for kind in PART_KINDS}
WORKLOADS = tuple(name.lower() for name in WORKLOAD_KINDS)


def _object_kind(kind: str, action: str, allowed: tuple[str, ...] = tuple(OBJECT_KINDS)) -> str:
    """`kind` as a field-path root (`StatefulSet` and `statefulset` alike), checked."""
    root = str(kind).lower()
    if root not in allowed:
        raise ActivityFailed(f"{action}: kind must be one of {', '.join(allowed)}, got {kind!r}")
    return root


def _patch(api: client.ApiClient, root: str, name: str, ns: str, body: Any, **params: Any) -> Any:
    """The typed client's patch of one object (namespaced or cluster-scoped)."""
    judged = KINDS[OBJECT_KINDS[root]]
    patch = judged.call(api, "patch")
    if judged.namespaced:
        return patch(name, ns, body, **params)
    return patch(name, body, **params)


def _containers_patch(container: dict[str, Any]) -> dict[str, Any]:
    """A strategic-merge patch of one container of a workload's pod template (containers
    merge by name: the named one changed, or added)."""
    return {"spec": {"template": {"spec": {"containers": [container]}}}}


def _patch_workload(
    kind: str, name: str, ns: str, field: str, body: dict[str, Any], secrets: Any
) -> dict[str, Any]:
    """A strategic-merge patch of workload `name` (of `kind`) as a drift of `field`."""
    return _drift(kind, name, ns, field, lambda api: _patch(api, kind, name, ns, body), secrets)


def set_container_image(
    name: str,
    ns: str = "default",
    image: str = "myapp:chaos",
    container: str = CONTAINER_NAME,
    kind: str = "deployment",
    secrets: Any = None,
) -> dict[str, Any]:
    """Change the image of one container of workload `name` (a strategic merge patch)."""
    kind = _object_kind(kind, "set_container_image", WORKLOADS)
    field = f"{kind}.spec.template.spec.containers[{container}].image"
    body = _containers_patch({"name": container, "image": image})
    return _patch_workload(kind, name, ns, field, body, secrets)


def add_env_var(
    name: str,
    ns: str = "default",
    env_name: str = "CHAOS_INJECTED",
    env_value: str = "1",
    container: str = CONTAINER_NAME,
    kind: str = "deployment",
    secrets: Any = None,
) -> dict[str, Any]:
    """Add an environment variable to one container (env merges by name: it is appended)."""
    kind = _object_kind(kind, "add_env_var", WORKLOADS)
    field = f"{kind}.spec.template.spec.containers[{container}].env"
    env = [{"name": env_name, "value": env_value}]
    body = _containers_patch({"name": container, "env": env})
    return _patch_workload(kind, name, ns, field, body, secrets)


def set_template_label(
    name: str,
    ns: str = "default",
    key: str = "app.kubernetes.io/component",
    value: str = "chaos",
    kind: str = "deployment",
    secrets: Any = None,
) -> dict[str, Any]:
    """Set a pod-template label of workload `name` (not a selector label: that is immutable):
    changed when the template has it (to `value`, or `value` with a suffix when it is that
    already), added when it has not (`compare.chaos.choices.label_value`)."""
    kind = _object_kind(kind, "set_template_label", WORKLOADS)
    field = f"{kind}.spec.template.metadata.labels[{key}]"

    def patch(api: client.ApiClient) -> Any:
        labels = (_template(api, kind, name, ns).get("metadata") or {}).get("labels")
        chosen = choices.label_value(labels, key, value)
        body = {"spec": {"template": {"metadata": {"labels": {key: chosen}}}}}
        return _patch(api, kind, name, ns, body)

    return _drift(kind, name, ns, field, patch, secrets)


def _template(api: client.ApiClient, kind: str, name: str, ns: str) -> dict[str, Any]:
    """Workload `name`'s pod template as it is now (API JSON)."""
    judged = KINDS[OBJECT_KINDS[kind]]
    live = api.sanitize_for_serialization(
        judged.read_call(api)(name, ns, _request_timeout=REQUEST_TIMEOUT)
    )
    return dict(pod_template(live, judged.kind) or {})


def _container(api: client.ApiClient, kind: str, name: str, ns: str, container: str) -> Any:
    """Container `container` of workload `name`'s pod template as it is now (API JSON)."""
    containers = (_template(api, kind, name, ns).get("spec") or {}).get("containers") or []
    found = next((c for c in containers if c.get("name") == container), None)
    if found is None:
        raise ActivityFailed(f"{kind} {ns}/{name} has no container {container!r}")
    return found


def set_cpu_request(
    name: str,
    ns: str = "default",
    cpu: str = choices.CPU_REQUEST,
    container: str = CONTAINER_NAME,
    kind: str = "deployment",
    secrets: Any = None,
) -> dict[str, Any]:
    """Set one container's CPU request (`resources.requests.cpu`): changed when it has one,
    set when it has none; `cpu`, unless that is its own value or above its CPU limit
    (`compare.chaos.choices.cpu_request`)."""
    kind = _object_kind(kind, "set_cpu_request", WORKLOADS)
    field = f"{kind}.spec.template.spec.containers[{container}].resources.requests.cpu"

    def patch(api: client.ApiClient) -> Any:
        try:
            value = choices.cpu_request(_container(api, kind, name, ns, container), str(cpu))
        except ValueError as exc:  # nothing to choose (NoChoice), or `cpu` is no quantity
            raise ActivityFailed(f"set_cpu_request: {kind} {ns}/{name}: {exc}") from exc
        changed = {"name": container, "resources": {"requests": {"cpu": value}}}
        return _patch(api, kind, name, ns, _containers_patch(changed))

    return _drift(kind, name, ns, field, patch, secrets)


def set_readiness_probe(
    name: str,
    ns: str = "default",
    period_seconds: int = choices.PROBE_PERIOD_S,
    container: str = CONTAINER_NAME,
    kind: str = "deployment",
    secrets: Any = None,
) -> dict[str, Any]:
    """Drift one container's readiness probe: its `periodSeconds` changed when it has one, a
    probe added when it has none (a TCP check of its first port, else an exec of `true`),
    with `period_seconds` (`compare.chaos.choices.readiness_probe`). Reports the probe's
    `periodSeconds`."""
    kind = _object_kind(kind, "set_readiness_probe", WORKLOADS)
    field = f"{kind}.spec.template.spec.containers[{container}].readinessProbe.periodSeconds"

    def patch(api: client.ApiClient) -> Any:
        live = _container(api, kind, name, ns, container)
        probe = choices.readiness_probe(live, int(period_seconds))
        changed = {"name": container, "readinessProbe": probe}
        return _patch(api, kind, name, ns, _containers_patch(changed))

    return _drift(kind, name, ns, field, patch, secrets)


def add_sidecar_container(
    name: str,
    ns: str = "default",
    container: str = "chaos-sidecar",
    image: str = "busybox:1.36",
    kind: str = "deployment",
    secrets: Any = None,
) -> dict[str, Any]:
    """Add a sidecar container to workload `name`'s pod template."""
    kind = _object_kind(kind, "add_sidecar_container", WORKLOADS)
    field = f"{kind}.spec.template.spec.containers[*].name"
    sidecar = {"name": container, "image": image, "command": ["sleep", "infinity"]}
    body = _containers_patch(sidecar)
    return _patch_workload(kind, name, ns, field, body, secrets)


def set_service_port(
    name: str,
    ns: str = "default",
    port: int = 9999,
    port_name: str = "",
    secrets: Any = None,
) -> dict[str, Any]:
    """Change the `port` of one of Service `name`'s ports: the one named `port_name`, else
    (an unnamed port) the one at that index, else (empty) the first. When another of its
    ports has `port` already, the next number no port of the Service has.

    A JSON patch: a strategic merge keyed on `port` would add a second port instead.
    """
    wanted = str(port_name or "")

    def patch(api: client.ApiClient) -> Any:
        core = client.CoreV1Api(api)
        ports = core.read_namespaced_service(name, ns).spec.ports or []
        index = next((i for i, p in enumerate(ports) if wanted and p.name == wanted), None)
        if index is None and wanted.isdigit() and int(wanted) < len(ports):
            index = int(wanted)
        if index is None and not wanted and ports:
            index = 0
        if index is None:
            raise ActivityFailed(f"service {ns}/{name} has no port named {wanted!r}")
        found.append(ports[index].name or str(index))
        # Another port of the Service may have that number already (a chart's second port):
        # the next free one, never a 422 for a duplicate, never the port's own value.
        taken = {p.port for p in ports}
        value = int(port)
        while value in taken:
            value = value + 1 if value < 65535 else 1024
        body = [{"op": "replace", "path": f"/spec/ports/{index}/port", "value": value}]
        return core.patch_namespaced_service(name, ns, body)

    found: list[str] = []
    result = _drift("service", name, ns, "service.spec.ports", patch, secrets)
    # The field names the port the patch changed (by name, or by index when it has none).
    result["field"] = f"service.spec.ports[{found[0]}].port"
    result["value"] = read_path(result["field"], {"service": {"spec": {"ports": result["value"]}}})
    return result


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
    """Patch one of the app's objects (`kind`: a field-path root, `deployment`, `statefulset`,
    `service`, `configmap`, ...) with any `patch`; report `field`.

    `patch` is a JSON patch (a list of operations: `remove` takes a field away, `test` guards
    an index) or a strategic-merge / merge patch (a mapping). `patch_type` is `json`,
    `strategic` or `merge`; empty means `json` for a list and `strategic` for a mapping.
    `field` is the path (compare.chaos.fields, starting with `kind`) whose stored value the
    action returns, in the object the API server answered with. A patch the API server rejects
    raises ActivityFailed naming the object and the API's message.
    """
    kind, content_type = _patch_arguments(kind, patch, field, patch_type)

    return _drift(
        kind,
        name,
        ns,
        field,
        lambda api: _patch(api, kind, name, ns, patch, _content_type=content_type),
        secrets,
    )


def _patch_arguments(kind: str, patch: Any, field: str, patch_type: str) -> tuple[str, str]:
    """Check `patch_object`'s arguments before anything is sent: (kind, content type)."""
    kind, patch_type = _object_kind(kind, "patch_object"), str(patch_type or "").lower()
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


DATA_KINDS = ("configmap", "secret")


def change_data(
    kind: str,
    name: str,
    ns: str = "default",
    key: str = "",
    value: str = "chaos",
    secrets: Any = None,
) -> dict[str, Any]:
    """Change one value of ConfigMap or Secret `name` (`kind`): `key`, else (empty) its first
    key, else a new key `chaos-injected`. Reports the stored `data` (a Secret's as hashes: the
    value set here is never returned, printed or kept)."""
    kind = _object_kind(kind, "change_data", DATA_KINDS)

    def patch(api: client.ApiClient) -> Any:
        core = client.CoreV1Api(api)
        read = (
            core.read_namespaced_config_map if kind == "configmap" else core.read_namespaced_secret
        )
        data = read(name, ns, _request_timeout=REQUEST_TIMEOUT).data or {}
        chosen = str(key) or next(iter(data), "chaos-injected")
        stored = str(value)
        if kind == "secret":
            stored = base64.b64encode(stored.encode()).decode()
        body = {"data": {chosen: stored}}
        return _patch(api, kind, name, ns, body, _content_type=PATCH_CONTENT_TYPES["merge"])

    return _drift(kind, name, ns, f"{kind}.data", patch, secrets)


def delete_object(kind: str, name: str, ns: str = "default", secrets: Any = None) -> dict[str, Any]:
    """Delete one of the app's objects (`kind`: `configmap`, `secret`, `rolebinding`,
    `clusterrolebinding`, a workload or the Service); returns its uid."""
    kind = _object_kind(kind, "delete_object")
    with _api(secrets, f"deleting {kind} {ns}/{name}") as api:
        judged = KINDS[OBJECT_KINDS[kind]]
        delete = judged.call(api, "delete")
        args = (name, ns) if judged.namespaced else (name,)
        status = api.sanitize_for_serialization(delete(*args, _request_timeout=REQUEST_TIMEOUT))
    # A delete answers with the object (most kinds) or a Status naming it (details.uid).
    uid = (status.get("metadata") or {}).get("uid") or (status.get("details") or {}).get("uid")
    return {"object": kind, "name": name, "uid": uid, "deleted": True}


def delete_statefulset_pod(
    name: str, ns: str = "default", ordinal: int = 0, secrets: Any = None
) -> dict[str, Any]:
    """Delete the pod of StatefulSet `name` with that ordinal (`<name>-<ordinal>`, its stable
    identity): its controller must make a pod of the same name, with a new uid."""
    pod = f"{name}-{int(ordinal)}"
    with _api(secrets, f"deleting pod {ns}/{pod}") as api:
        core = client.CoreV1Api(api)
        found = core.read_namespaced_pod(pod, ns, _request_timeout=REQUEST_TIMEOUT)
        owners = [r.name for r in found.metadata.owner_references or [] if r.kind == "StatefulSet"]
        if owners != [name]:
            raise ActivityFailed(f"pod {ns}/{pod} is not StatefulSet {name}'s")
        core.delete_namespaced_pod(pod, ns, _request_timeout=REQUEST_TIMEOUT)
    return {"object": "pod", "name": pod, "uid": found.metadata.uid, "deleted": True}


def _controllers(configuration: Any) -> approaches.LocalControllers:
    """The local controllers of the trial's approach (`webapp_approach`): for a target file
    (`webapp_app_file`), the ones its arm runs on (an operator's `install.process`), else the
    approach's shared ones."""
    name = str((configuration or {}).get("webapp_approach") or "")
    app_file = str((configuration or {}).get("webapp_app_file") or "")
    try:
        approach = approaches.get(name)
        if app_file and is_target_file(Path(app_file)):
            found = approach.target_controllers(approaches.load_target(Path(app_file)))
        else:
            found = approach.controllers()
    except CompareError as exc:
        raise ActivityFailed(exc.message) from exc
    if found is None:
        raise ActivityFailed(f"approach {name!r} runs no local controllers to stop or start")
    return found


def stop_operator(
    kill: bool = False, configuration: Any = None, secrets: Any = None
) -> dict[str, Any]:
    """Stop the trial's approach's shared controllers (the WebApp operator: `webapp_approach`
    names the approach): SIGTERM (graceful), or SIGKILL with `kill`.

    Nothing reconciles until `start_operator`; do not delete a namespace holding a WebApp
    meanwhile (its finalizer needs the operator). Trials that share the fault
    (`compare.chaos.shared`) stop them once.
    """
    controllers = _controllers(configuration)
    target = cluster_target(secrets)

    def stop() -> dict[str, Any]:
        try:
            controllers.stop(target, kill=bool(kill))
        except CompareError as exc:
            raise ActivityFailed(exc.message) from exc
        return {"controllers": "stopped", "signal": "SIGKILL" if kill else "SIGTERM"}

    return dict(shared.perform(configuration, "stop the operator", stop))


def start_operator(configuration: Any = None, secrets: Any = None) -> dict[str, Any]:
    """Start the trial's approach's shared controllers again (nothing happens when they run
    already); trials that share the fault start them once."""
    controllers = _controllers(configuration)
    target = cluster_target(secrets)

    def start() -> dict[str, Any]:
        try:
            controllers.start(target)
        except CompareError as exc:
            raise ActivityFailed(exc.message) from exc
        return {"controllers": "running"}

    return dict(shared.perform(configuration, "start the operator", start))


def set_pod_image(
    label_selector: str,
    ns: str = "default",
    image: str = "myapp:chaos",
    container: str = CONTAINER_NAME,
    secrets: Any = None,
) -> dict[str, Any]:
    """Change a container's image on one running pod in place (the first, by name, the
    selector matches): what `kubectl set image pod/...` does. The API allows it; the pod's
    controller only replaces missing pods, so nothing restores it."""
    with _api(secrets, f"patching a pod in {ns}") as api:
        core = client.CoreV1Api(api)
        pods = core.list_namespaced_pod(
            ns, label_selector=label_selector, _request_timeout=REQUEST_TIMEOUT
        ).items
        running = sorted(
            (p for p in pods if p.metadata.deletion_timestamp is None),
            key=lambda p: p.metadata.name,
        )
        if not running:
            raise ActivityFailed(f"set_pod_image: no running pod in {ns} matches {label_selector}")
        pod = running[0]
        body = {"spec": {"containers": [{"name": container, "image": image}]}}
        stored = core.patch_namespaced_pod(
            pod.metadata.name, ns, body, _request_timeout=REQUEST_TIMEOUT
        )
    images = {c.name: c.image for c in stored.spec.containers}
    return {
        "object": "pod",
        "name": pod.metadata.name,
        "uid": pod.metadata.uid,
        "field": f"pod.spec.containers[{container}].image",
        "value": images.get(container),
    }


FOREIGN_ADDRESS = "192.0.2.10"  # TEST-NET-1 (RFC 5737): routes nowhere real


def add_endpoint_slice(
    service: str,
    ns: str = "default",
    address: str = FOREIGN_ADDRESS,
    name: str = "",
    secrets: Any = None,
) -> dict[str, Any]:
    """Add an EndpointSlice for Service `service` that its controller does not manage: the
    Service then routes to `address` beside its pods (each of its ports, at its target port
    when that is a number, else at its port). Named `name`, else `<service>-foreign`."""
    slice_name = str(name or f"{service}-foreign")
    with _api(secrets, f"adding an EndpointSlice for service {ns}/{service}") as api:
        core = client.CoreV1Api(api)
        found = core.read_namespaced_service(service, ns, _request_timeout=REQUEST_TIMEOUT)
        ports = found.spec.ports or []
        body = {
            "apiVersion": "discovery.k8s.io/v1",
            "kind": "EndpointSlice",
            # Only the Service's name: no `managed-by` of the EndpointSlice controller.
            "metadata": {"name": slice_name, "labels": {SERVICE_NAME: service}},
            "addressType": "IPv6" if ":" in str(address) else "IPv4",
            "endpoints": [{"addresses": [str(address)], "conditions": {"ready": True}}],
            "ports": [
                {
                    "name": p.name or "",
                    "protocol": p.protocol or "TCP",
                    "port": p.target_port if isinstance(p.target_port, int) else p.port,
                }
                for p in ports
            ],
        }
        create = KINDS["EndpointSlice"].create_call(api)
        stored = create(ns, body, _request_timeout=REQUEST_TIMEOUT)
    return {
        "object": "endpointslice",
        "name": slice_name,
        "uid": stored.metadata.uid,
        "field": "endpointslices.foreign",
        "value": [slice_name],
    }


RECREATE_TIMEOUT_S = 30.0


def recreate_object(
    kind: str,
    name: str,
    ns: str = "default",
    patch: dict[str, Any] | None = None,
    timeout: float = RECREATE_TIMEOUT_S,
    secrets: Any = None,
) -> dict[str, Any]:
    """Delete one of the app's objects and create a copy of it at once, with `patch` merged
    in (a JSON merge patch: `null` removes a key): someone else's object of the same name, a
    new uid. The copy leaves out what the API server wrote or allocated (status, uid,
    resourceVersion, clusterIP(s), node ports, a health-check node port, ipFamilies where the
    patch redoes the allocation: `compare.judge.allow.without_allocated`) but what `patch` sets.
    A copy the API server refuses fails before anything is deleted. Retries (bounded) while
    the name is still taken."""
    kind = _object_kind(kind, "recreate_object")
    judged = KINDS[OBJECT_KINDS[kind]]
    with _api(secrets, f"recreating {kind} {ns}/{name}") as api:
        read = judged.read_call(api)
        old = api.sanitize_for_serialization(read(name, ns, _request_timeout=REQUEST_TIMEOUT))
        # What the API server wrote or allocated is the old object's: the copy gets its own,
        # but for what the patch sets (one definition, with the judge's ALLOCATED fields).
        body = merge_patch(without_allocated(old, patch), patch or {})
        delete = judged.call(api, "delete")
        args = (name, ns) if judged.namespaced else (name,)
        create = judged.create_call(api)

        def attempt() -> Any:
            """Delete, create: the copy (None when the name was taken again meanwhile)."""
            try:
                delete(*args, _request_timeout=REQUEST_TIMEOUT)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
            try:
                return create(ns, body, _request_timeout=REQUEST_TIMEOUT)
            except client.ApiException as exc:
                if exc.status != 409:
                    raise
            return None

        try:
            # A copy the API server refuses (422) must not cost the original: checked first.
            create(ns, body, dry_run="All", _request_timeout=REQUEST_TIMEOUT)
        except client.ApiException as exc:
            if exc.status != 409:  # the name taken by the original: the copy is valid
                raise

        # A controller may make the object again first: then that one is deleted in turn,
        # until the copy gets the name (bounded).
        created = wait_for(
            attempt,
            deadline=float(timeout),
            done=lambda made: made is not None,
            timed_out=lambda _: ActivityFailed(
                f"recreate_object: {kind} {ns}/{name} was taken again each time within"
                f" {float(timeout):.0f}s"
            ),
            interval=0.05,
        )
        stored = api.sanitize_for_serialization(created)
    return {
        "object": kind,
        "name": name,
        "uid": stored["metadata"]["uid"],
        "replaced": (old.get("metadata") or {}).get("uid"),
    }


def merge_patch(target: Any, patch: Any) -> Any:
    """`patch` (RFC 7386, a JSON merge patch) applied to `target` (changed in place)."""
    if not isinstance(patch, dict):
        return patch
    if not isinstance(target, dict):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge_patch(target.get(key), value)
    return target
