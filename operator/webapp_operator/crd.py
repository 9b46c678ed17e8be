"""The WebApp CustomResourceDefinition, generated from the typed model (never hand-edited).

`build_crd()` turns the pydantic spec and status (`types.py`) into a structural OpenAPI schema
and adds what only the API server can enforce: CEL rules for cross-field checks, the status and
scale subresources, and the printer columns. `python -m webapp_operator.manifests` writes it to
operator/config/crd/bases/; a test fails when the committed file differs.
"""

from __future__ import annotations

import copy
from typing import Any

from compare.webapp.schemas import Schema, plain_schema, spec_schema
from webapp_operator.names import (
    API_GROUP,
    API_VERSION,
    CRD_NAME,
    KIND,
    PLURAL,
    SHORT_NAMES,
    SINGULAR,
)
from webapp_operator.types import WebAppStatus

__all__ = ["CEL_RULES", "MAX_ENV", "build_crd", "openapi_schema"]

# CEL's cost estimator needs a bound on every list a rule walks (the env rule is quadratic).
MAX_ENV = 64

_QUANTITY_RULE = (
    "!has(self.requests) || !has(self.limits) || !has(self.requests.{0}) || "
    "!has(self.limits.{0}) || "
    "quantity(self.limits.{0}).compareTo(quantity(self.requests.{0})) >= 0"
)

# Cross-field rules the plain schema cannot say, each with the message the user sees.
CEL_RULES: dict[str, list[dict[str, str]]] = {
    # The name becomes a Service name, which must be a DNS-1035 label (letter first).
    "": [
        {
            "rule": "self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && "
            "size(self.metadata.name) <= 53",
            "message": "metadata.name must be a DNS-1035 label of at most 53 characters "
            "(it names the Deployment and the Service)",
        }
    ],
    "spec.env": [
        {
            "rule": "self.all(e, self.filter(f, f.name == e.name).size() == 1)",
            "message": "env names must be unique",
        }
    ],
    "spec.resources": [
        {
            "rule": _QUANTITY_RULE.format("cpu"),
            "message": "resources.limits.cpu must be >= resources.requests.cpu",
        },
        {
            "rule": _QUANTITY_RULE.format("memory"),
            "message": "resources.limits.memory must be >= resources.requests.memory",
        },
    ],
}

PRINTER_COLUMNS = [
    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
    {"name": "Ready", "type": "integer", "jsonPath": ".status.readyReplicas"},
    {"name": "Image", "type": "string", "jsonPath": ".spec.image"},
    {"name": "Phase", "type": "string", "jsonPath": ".status.phase"},
    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
]


def _structural(node: Any, *, keep_defaults: bool) -> Any:
    """A structural schema: no `additionalProperties` next to `properties` (the API server
    prunes unknown fields anyway), optionally without defaults."""
    if isinstance(node, list):
        return [_structural(item, keep_defaults=keep_defaults) for item in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key == "additionalProperties" and "properties" in node:
            continue
        if key == "default" and not keep_defaults:
            continue
        if key == "properties":
            out[key] = {
                name: _structural(sub, keep_defaults=keep_defaults) for name, sub in value.items()
            }
        else:
            out[key] = _structural(value, keep_defaults=keep_defaults)
    return out


def _at(schema: Schema, path: str) -> Schema:
    node = schema
    for part in filter(None, path.split(".")):
        node = node["properties"][part]
    return node


def openapi_schema() -> Schema:
    """The openAPIV3Schema of the WebApp: metadata, spec (with defaults), status (without)."""
    spec = _structural(spec_schema(), keep_defaults=True)
    spec["properties"]["env"]["maxItems"] = MAX_ENV
    # Status defaults would be filled in on every read; the operator writes status whole.
    status = _structural(plain_schema(WebAppStatus), keep_defaults=False)
    root: Schema = {
        "type": "object",
        "description": "WebApp: a Deployment plus a Service, kept in their desired state.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
            "status": status,
        },
    }
    for path, rules in CEL_RULES.items():
        _at(root, path)["x-kubernetes-validations"] = copy.deepcopy(rules)
    return root


def build_crd() -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD_NAME},
        "spec": {
            "group": API_GROUP,
            "names": {
                "kind": KIND,
                "listKind": f"{KIND}List",
                "plural": PLURAL,
                "singular": SINGULAR,
                "shortNames": list(SHORT_NAMES),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": API_VERSION,
                    "served": True,
                    "storage": True,
                    "schema": {"openAPIV3Schema": openapi_schema()},
                    "subresources": {
                        "status": {},
                        "scale": {
                            "specReplicasPath": ".spec.replicas",
                            "statusReplicasPath": ".status.replicas",
                            "labelSelectorPath": ".status.selector",
                        },
                    },
                    "additionalPrinterColumns": copy.deepcopy(PRINTER_COLUMNS),
                }
            ],
        },
    }
