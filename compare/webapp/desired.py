"""The desired state a WebApp implies, and the comparison of live objects against it.

Both approaches must produce a Deployment and a Service named after the WebApp with these
fields; the steady-state probe, the trial runner and the tests all judge healing with
`compare_live`, so "healed" means one thing everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from compare.webapp.spec import WebApp

APP_NAME = "webapp"
CONTAINER_NAME = "webapp"
PORT_NAME = "http"
COMPONENT = "web"


def selector_labels(name: str) -> dict[str, str]:
    """Stable selector labels (name + instance only, as `helm create` does)."""
    return {"app.kubernetes.io/name": APP_NAME, "app.kubernetes.io/instance": name}


@dataclass(frozen=True)
class DesiredState:
    name: str
    replicas: int
    image: str
    port: int
    env: tuple[tuple[str, str], ...]
    selector: dict[str, str]
    # Pod-template labels both approaches own; other labels (managed-by, chart) may differ.
    template_labels: dict[str, str]
    service_type: str = "ClusterIP"


@dataclass(frozen=True)
class Mismatch:
    """One field whose live value differs from the desired one (None = object absent)."""

    field: str
    desired: Any
    actual: Any

    def __str__(self) -> str:
        return f"{self.field}: want {self.desired!r}, got {self.actual!r}"


def desired_state(webapp: WebApp, *, instance: str | None = None) -> DesiredState:
    """What the WebApp implies. `instance` is the app.kubernetes.io/instance label value when
    it is not the WebApp's name (a Helm release installed under another name)."""
    spec = webapp.spec
    selector = selector_labels(instance or webapp.name)
    return DesiredState(
        name=webapp.name,
        replicas=spec.replicas,
        image=spec.image,
        port=spec.port,
        env=tuple((var.name, var.value) for var in spec.env),
        selector=selector,
        template_labels={**selector, "app.kubernetes.io/component": COMPONENT},
    )


@dataclass
class _Diff:
    found: list[Mismatch] = field(default_factory=list)

    def check(self, name: str, desired: Any, actual: Any) -> None:
        if desired != actual:
            self.found.append(Mismatch(name, desired, actual))


def compare_live(
    desired: DesiredState,
    deployment: dict[str, Any] | None,
    service: dict[str, Any] | None,
    *,
    require_ready: bool = True,
) -> list[Mismatch]:
    """Every owned field of the live Deployment/Service (API JSON, camelCase) that differs.

    An empty list means the desired state holds. With require_ready, all desired pods must
    also be Ready and updated (the rollout has finished).
    """
    diff = _Diff()
    if deployment is None:
        diff.check("deployment", "present", None)
    else:
        _compare_deployment(desired, deployment, diff, require_ready)
    if service is None:
        diff.check("service", "present", None)
    else:
        _compare_service(desired, service, diff)
    return diff.found


def _compare_deployment(
    desired: DesiredState, dep: dict[str, Any], diff: _Diff, require_ready: bool
) -> None:
    spec = dep.get("spec") or {}
    diff.check("deployment.spec.replicas", desired.replicas, spec.get("replicas"))
    diff.check(
        "deployment.spec.selector",
        desired.selector,
        (spec.get("selector") or {}).get("matchLabels"),
    )
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    for key, value in desired.template_labels.items():
        diff.check(f"deployment.template.labels[{key}]", value, labels.get(key))
    containers = (template.get("spec") or {}).get("containers") or []
    diff.check(
        "deployment.template.containers",
        [CONTAINER_NAME],
        [c.get("name") for c in containers],
    )
    main = next((c for c in containers if c.get("name") == CONTAINER_NAME), None)
    if main is not None:
        diff.check("deployment.template.image", desired.image, main.get("image"))
        ports = [p.get("containerPort") for p in main.get("ports") or []]
        diff.check("deployment.template.containerPort", [desired.port], ports)
        env = [(e.get("name"), e.get("value", "")) for e in main.get("env") or []]
        diff.check("deployment.template.env", list(desired.env), env)
    if require_ready:
        status = dep.get("status") or {}
        meta = dep.get("metadata") or {}
        diff.check(
            "deployment.status.readyReplicas", desired.replicas, status.get("readyReplicas") or 0
        )
        diff.check(
            "deployment.status.updatedReplicas",
            desired.replicas,
            status.get("updatedReplicas") or 0,
        )
        if (status.get("observedGeneration") or 0) < (meta.get("generation") or 0):
            diff.check(
                "deployment.status.observedGeneration",
                meta.get("generation"),
                status.get("observedGeneration"),
            )


def _compare_service(desired: DesiredState, svc: dict[str, Any], diff: _Diff) -> None:
    spec = svc.get("spec") or {}
    diff.check("service.spec.type", desired.service_type, spec.get("type"))
    diff.check("service.spec.selector", desired.selector, spec.get("selector"))
    ports = [(p.get("port"), p.get("targetPort")) for p in spec.get("ports") or []]
    diff.check("service.spec.ports", [(desired.port, PORT_NAME)], ports)
