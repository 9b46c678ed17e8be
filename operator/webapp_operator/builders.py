"""Pure builders: the Deployment and Service a WebApp implies, as API JSON.

No I/O here: the reconciler applies what these return (server-side apply), the tests compare
them field by field with the Helm chart's output. The shape mirrors charts/webapp (names,
labels, probes, restricted security context) so both approaches deploy the same workload.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from compare.webapp import CONTAINER_NAME, PORT_NAME, WebApp, selector_labels
from webapp_operator.names import (
    API_GROUP_VERSION,
    INSTANCE_LABEL,
    KIND,
    MANAGED_BY_LABEL,
    OPERATOR_NAME,
)

__all__ = [
    "WebAppRef",
    "build_deployment",
    "build_service",
    "child_labels",
    "owner_reference",
    "owning_webapp",
    "selector_string",
]

COMPONENT_LABEL = "app.kubernetes.io/component"
COMPONENT = "web"
# The restricted Pod Security Standard, as the chart sets it.
NONROOT_ID = 65532
POD_SECURITY_CONTEXT: Mapping[str, Any] = {
    "runAsNonRoot": True,
    "runAsUser": NONROOT_ID,
    "runAsGroup": NONROOT_ID,
    "fsGroup": NONROOT_ID,
    "seccompProfile": {"type": "RuntimeDefault"},
}
CONTAINER_SECURITY_CONTEXT: Mapping[str, Any] = {
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "runAsNonRoot": True,
    "capabilities": {"drop": ["ALL"]},
    "seccompProfile": {"type": "RuntimeDefault"},
}
# Zero-valued fields (initialDelaySeconds: 0) are left out: the API server drops them, and a
# field that never reads back would look like drift forever.
READINESS_PROBE: Mapping[str, Any] = {
    "httpGet": {"path": "/", "port": PORT_NAME},
    "periodSeconds": 5,
    "timeoutSeconds": 1,
    "failureThreshold": 3,
}
LIVENESS_PROBE: Mapping[str, Any] = {
    "httpGet": {"path": "/", "port": PORT_NAME},
    "initialDelaySeconds": 10,
    "periodSeconds": 10,
    "timeoutSeconds": 1,
    "failureThreshold": 3,
}
TMP_VOLUME = "tmp"


def owner_reference(webapp: Mapping[str, Any]) -> dict[str, Any]:
    """The controller reference that makes the garbage collector delete children with it."""
    meta = webapp["metadata"]
    return {
        "apiVersion": API_GROUP_VERSION,
        "kind": KIND,
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


class WebAppRef(NamedTuple):
    """Whom a child says it belongs to: the WebApp's name, and its uid when the child carries
    a controller reference to it (None: only the operator's labels name it)."""

    name: str
    uid: str | None


def controller_reference(child: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The child's controller owner reference, whoever it names."""
    for ref in (child.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller"):
            found: Mapping[str, Any] = ref
            return found
    return None


def owning_webapp(child: Mapping[str, Any]) -> WebAppRef | None:
    """The WebApp a child belongs to: its controller reference when that is a WebApp; with no
    controller at all (someone stripped it), the operator's labels; else none (another
    controller's object, or nobody's)."""
    ref = controller_reference(child)
    if ref is not None:
        if ref.get("kind") == KIND and ref.get("apiVersion") == API_GROUP_VERSION:
            return WebAppRef(str(ref.get("name")), str(ref.get("uid")))
        return None
    labels = (child.get("metadata") or {}).get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) == OPERATOR_NAME and labels.get(INSTANCE_LABEL):
        return WebAppRef(str(labels[INSTANCE_LABEL]), None)
    return None


def child_labels(name: str) -> dict[str, str]:
    """Labels of the Deployment, the Service and the pod template."""
    return {
        **selector_labels(name),
        COMPONENT_LABEL: COMPONENT,
        MANAGED_BY_LABEL: OPERATOR_NAME,
    }


def selector_string(name: str) -> str:
    """The pods' selector as `kubectl get -l` takes it (the scale subresource reports it)."""
    return ",".join(f"{key}={value}" for key, value in sorted(selector_labels(name).items()))


def _metadata(webapp: WebApp, namespace: str, owner: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "name": webapp.name,
        "namespace": namespace,
        "labels": child_labels(webapp.name),
        "ownerReferences": [dict(owner)],
    }


def _container(webapp: WebApp) -> dict[str, Any]:
    spec = webapp.spec
    container: dict[str, Any] = {
        "name": CONTAINER_NAME,
        "image": spec.image,
        "imagePullPolicy": "IfNotPresent",
        "securityContext": _copy(CONTAINER_SECURITY_CONTEXT),
        "ports": [{"name": PORT_NAME, "containerPort": spec.port, "protocol": "TCP"}],
        "readinessProbe": _copy(READINESS_PROBE),
        "livenessProbe": _copy(LIVENESS_PROBE),
        "volumeMounts": [{"name": TMP_VOLUME, "mountPath": "/tmp"}],
    }
    if spec.env:
        # An empty value is omitted, as the API server would store it.
        container["env"] = [
            {"name": var.name, "value": var.value} if var.value else {"name": var.name}
            for var in spec.env
        ]
    if spec.resources is not None:
        resources = spec.resources.model_dump(exclude_none=True)
        if resources:
            container["resources"] = resources
    return container


def build_deployment(webapp: WebApp, namespace: str, owner: Mapping[str, Any]) -> dict[str, Any]:
    """The Deployment of a WebApp: named after it, owned by it."""
    selector = selector_labels(webapp.name)
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": _metadata(webapp, namespace, owner),
        "spec": {
            "replicas": webapp.spec.replicas,
            "selector": {"matchLabels": selector},
            "template": {
                "metadata": {"labels": child_labels(webapp.name)},
                "spec": {
                    # The app does not talk to the Kubernetes API; no token in the pod.
                    "automountServiceAccountToken": False,
                    "securityContext": _copy(POD_SECURITY_CONTEXT),
                    "containers": [_container(webapp)],
                    "volumes": [{"name": TMP_VOLUME, "emptyDir": {}}],
                },
            },
        },
    }


def build_service(webapp: WebApp, namespace: str, owner: Mapping[str, Any]) -> dict[str, Any]:
    """The ClusterIP Service of a WebApp: one port, targeting the container's named port."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _metadata(webapp, namespace, owner),
        "spec": {
            "type": "ClusterIP",
            "selector": selector_labels(webapp.name),
            "ports": [
                {
                    "name": PORT_NAME,
                    "port": webapp.spec.port,
                    "targetPort": PORT_NAME,
                    "protocol": "TCP",
                }
            ],
        },
    }


def _copy(value: Any) -> Any:
    """A deep copy of the constant templates, so callers may mutate what they get."""
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value
