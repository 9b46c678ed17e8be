"""The complete objects each approach deploys for a WebApp: what the judge holds them to.

Helm: the chart's rendered manifest for the WebApp's values (`helm template`, hooks dropped) with
Helm's own ownership metadata (`compare.deploy.ownership`) - exactly what `helm upgrade --install`
applies. Operator: the same chart rendering as the operator applies it
(`compare.deploy.reference`: its managed-by label and owner reference, without the chart's own
metadata labels) - an independent reference, never the operator's own builders. Flux: the
chart's rendered manifest, which helm-controller installs with the same values and release
name, plus what helm-controller writes on every object (Helm's metadata and its origin
labels). Nothing is picked field by field; the judge (`compare.judge`) adds the API's
defaults and compares closed-world. Both steps are cached where they are made (the Helm
rendering, the judge's dry-run), so calling this often is cheap.
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from compare.deploy.flux import flux_manifest
from compare.deploy.helm import webapp_manifest
from compare.deploy.ownership import helm_applied
from compare.deploy.reference import operator_reference
from compare.errors import CompareError
from compare.judge import DesiredObjects, with_api_defaults
from compare.webapp import WebApp

APPROACHES = ("helm", "operator", "flux")


def desired_manifest(
    approach: str, webapp: WebApp, namespace: str, *, release: str | None = None
) -> list[dict[str, Any]]:
    """The objects `approach` applies for `webapp` in `namespace` (no cluster needed)."""
    if approach == "helm":
        release = release or webapp.name
        return helm_applied(
            webapp_manifest(webapp, release=release), release=release, namespace=namespace
        )
    if approach == "flux":
        return flux_manifest(webapp, namespace, release=release)
    if approach == "operator":
        return operator_reference(webapp, namespace)
    raise CompareError(f"approach {approach!r}: unknown (known: {', '.join(APPROACHES)})")


def desired_objects(
    api: client.ApiClient,
    approach: str,
    webapp: WebApp,
    namespace: str,
    *,
    release: str | None = None,
) -> DesiredObjects:
    """The approach's objects with the API's defaults, ready for the judge."""
    return with_api_defaults(
        api, namespace, desired_manifest(approach, webapp, namespace, release=release)
    )
