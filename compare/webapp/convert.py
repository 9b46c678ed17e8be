"""The WebApp spec in the two forms the approaches consume: Helm values and the CR body."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compare.errors import CompareError
from compare.webapp.spec import API_GROUP, API_VERSION, KIND, WebApp

# The keys `to_helm_values` sets from the WebApp; extra values must not fight over them.
WEBAPP_KEYS = frozenset({"fullnameOverride", "replicaCount", "image", "port", "env", "resources"})


def to_helm_values(webapp: WebApp) -> dict[str, Any]:
    """Values for charts/webapp; `fullnameOverride` makes the objects carry the WebApp's name,
    exactly as the operator names its children."""
    spec = webapp.spec
    values: dict[str, Any] = {
        "fullnameOverride": webapp.name,
        "replicaCount": spec.replicas,
        "image": spec.image,
        "port": spec.port,
        "env": [var.model_dump() for var in spec.env],
    }
    if spec.resources is not None:
        values["resources"] = spec.resources.model_dump(exclude_none=True)
    return values


def chart_values(webapp: WebApp, extra: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The values of one install: the WebApp's, plus chart settings from `extra`."""
    values = to_helm_values(webapp)
    if extra:
        owned = sorted(WEBAPP_KEYS.intersection(extra))
        if owned:
            raise CompareError(
                f"values: {owned[0]} is set from the WebApp manifest; change it there instead"
            )
        values.update(extra)
    return values


def to_cr(webapp: WebApp, namespace: str | None = None) -> dict[str, Any]:
    """The WebApp custom resource body for the operator path."""
    metadata: dict[str, Any] = {"name": webapp.name}
    if namespace or webapp.metadata.namespace:
        metadata["namespace"] = namespace or webapp.metadata.namespace
    return {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": KIND,
        "metadata": metadata,
        "spec": webapp.spec.model_dump(mode="json", exclude_none=True),
    }
