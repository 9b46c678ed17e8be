"""What the faults act on: the app's workload, its pods and its Service, taken from its objects.

The built-in experiments name what they break through configuration variables, never through
the WebApp's own names: `webapp_workload` (the Deployment), `webapp_pod_selector` (its pods, a
label selector), `webapp_container` (the container an image or env fault changes) and
`webapp_service` (the Service). For the built-in WebApp these are today's names; for a target
(`compare run --target FILE`) they are derived from the app's manifest: the first Deployment,
its `spec.selector.matchLabels`, its first container, the first Service - as the judge picks
them (`compare.judge.DesiredObjects`).

An experiment needs what its activities use: one that uses `${webapp_service}` needs a
Service, one that uses the workload's variables needs a Deployment. An app without it leaves
the experiment out of the run with the reason (`unmet`), never an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from compare.webapp import CONTAINER_NAME, WebApp, selector_labels

WORKLOAD_KIND = "Deployment"
# configuration variable -> what it names (an experiment using it needs that part of the app)
VARIABLES = {
    "webapp_workload": "workload",
    "webapp_pod_selector": "workload",
    "webapp_container": "workload",
    "webapp_service": "service",
}
NEEDS = ("workload", "service")


@dataclass(frozen=True)
class Workload:
    """The parts of an app the built-in faults act on (None: the app has no such part)."""

    kind: str
    name: str | None  # the Deployment
    pod_selector: Mapping[str, str]
    container: str | None
    service: str | None

    def has(self, need: str) -> bool:
        return (self.name if need == "workload" else self.service) is not None

    def configuration(self) -> dict[str, str]:
        """The experiment's configuration values (as `chaos run --var`); "" where absent."""
        return {
            "webapp_workload": self.name or "",
            "webapp_pod_selector": ",".join(f"{k}={v}" for k, v in self.pod_selector.items()),
            "webapp_container": self.container or "",
            "webapp_service": self.service or "",
        }

    def describe(self, need: str) -> str:
        if need == "service":
            return f"Service {self.service}"
        return f"{self.kind} {self.name}"


def builtin_workload(webapp: WebApp) -> Workload:
    """The built-in WebApp's parts, named exactly as before the variables existed."""
    return Workload(
        kind=WORKLOAD_KIND,
        name=webapp.name,
        pod_selector=selector_labels(webapp.name),
        container=CONTAINER_NAME,
        service=webapp.name,
    )


def workload_of(objects: Sequence[Mapping[str, Any]]) -> Workload:
    """The first Deployment (its selector's matchLabels, its first container) and the first
    Service of a manifest, in the manifest's order."""
    deployment = next((o for o in objects if o.get("kind") == WORKLOAD_KIND), None)
    service = next((o for o in objects if o.get("kind") == "Service"), None)
    name = container = None
    selector: dict[str, str] = {}
    if deployment is not None:
        name = str((deployment.get("metadata") or {}).get("name"))
        spec = deployment.get("spec") or {}
        selector = {
            str(k): str(v)
            for k, v in ((spec.get("selector") or {}).get("matchLabels") or {}).items()
        }
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers") or []
        if containers:
            container = str(containers[0].get("name"))
    return Workload(
        kind=WORKLOAD_KIND,
        name=name,
        pod_selector=selector,
        container=container,
        service=None if service is None else str((service.get("metadata") or {}).get("name")),
    )


def needs_of(document: Mapping[str, Any]) -> tuple[str, ...]:
    """What an experiment's activities act on: the parts whose variables they use."""
    text = json.dumps(
        [document.get(key) for key in ("steady-state-hypothesis", "method", "rollbacks")]
    )
    found = {need for var, need in VARIABLES.items() if "${" + var + "}" in text}
    return tuple(n for n in NEEDS if n in found)


def unmet(needs: Sequence[str], workload: Workload) -> str | None:
    """Why an experiment that acts on `needs` cannot run against this app (None: it can)."""
    for need in needs:
        if not workload.has(need):
            part = "a Service" if need == "service" else f"a {WORKLOAD_KIND}"
            return f"needs {part} (the app's manifest has none)"
    return None
