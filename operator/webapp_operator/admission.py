"""Admission: the rules the CRD schema cannot express, and the webhook configuration.

The validating handler (registered in `handlers`) calls `admission_problems`, which reuses the
shared model: the image-reference grammar (`WebAppSpec`'s validator) and the policy
(`policy_violations`: replicas ceiling, reserved env names). The same rules reject a bad
WebApp on the Helm path, so both approaches refuse the same input.

`webhook_configuration` builds the ValidatingWebhookConfiguration for either a URL (the local
operator on 127.0.0.1) or an in-cluster Service, with the CA bundle the apiserver verifies.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from compare.webapp import WebAppSpec
from compare.webapp.load import format_validation_error
from compare.webapp.spec import MAX_REPLICAS, policy_violations
from webapp_operator.names import (
    API_GROUP,
    API_VERSION,
    PLURAL,
    SCALE_WEBHOOK_ID,
    WEBHOOK_CONFIGURATION,
    WEBHOOK_ID,
)

__all__ = ["admission_problems", "scale_problems", "webhook_configuration"]

TIMEOUT_SECONDS = 5


def admission_problems(spec: Mapping[str, Any] | None) -> list[str]:
    """Every reason to refuse this spec, each naming its field (empty: admit)."""
    try:
        parsed = WebAppSpec.model_validate(dict(spec or {}))
    except ValidationError as exc:
        return [f"spec.{format_validation_error(exc)}"]
    return policy_violations(parsed)


def scale_problems(replicas: Any) -> list[str]:
    """`kubectl scale` goes through the scale subresource and never sends a WebApp; the
    replicas ceiling must hold there too."""
    if isinstance(replicas, int) and replicas > MAX_REPLICAS:
        return [f"spec.replicas: {replicas} exceeds the ceiling of {MAX_REPLICAS}"]
    return []


def _client_config(
    path: str, ca_bundle: bytes, *, url: str | None, service: Mapping[str, Any] | None
) -> dict[str, Any]:
    config: dict[str, Any] = {"caBundle": base64.b64encode(ca_bundle).decode("ascii")}
    if url is not None:
        config["url"] = f"{url.rstrip('/')}/{path}"
    elif service is not None:
        config["service"] = {**service, "path": f"/{path}"}
    else:
        raise ValueError("a webhook needs a url or a service")
    return config


# Only a new or changed spec is judged, so the API server does not even call the webhook for
# metadata-only updates (kopf's finalizer and annotations, labels): at a thousand WebApps those
# calls queued behind a busy operator and timed out, failing the operator's own writes.
SPEC_CHANGED = {
    "name": "spec-changed",
    "expression": "request.operation != 'UPDATE' || !has(oldObject.spec) || !has(object.spec)"
    " || object.spec != oldObject.spec",
}


def webhook_configuration(
    ca_bundle: bytes,
    *,
    url: str | None = None,
    service: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The ValidatingWebhookConfiguration: one webhook for WebApp writes, one for scaling.

    kopf's webhook server routes by path, so each webhook's path is its handler id.
    Objects being deleted are not sent (matchConditions): removing the finalizer must never
    depend on the webhook being reachable; nor are updates that leave the spec as it was.
    """

    def webhook(
        name: str, handler: str, resource: str, operations: list[str], *conditions: dict[str, str]
    ) -> dict[str, Any]:
        return {
            "name": f"{name}.{PLURAL}.{API_GROUP}",
            "admissionReviewVersions": ["v1"],
            "sideEffects": "None",
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "timeoutSeconds": TIMEOUT_SECONDS,
            "rules": [
                {
                    "apiGroups": [API_GROUP],
                    "apiVersions": [API_VERSION],
                    "resources": [resource],
                    "operations": operations,
                    "scope": "Namespaced",
                }
            ],
            "matchConditions": [
                {"name": "not-deleting", "expression": "!has(object.metadata.deletionTimestamp)"},
                *conditions,
            ],
            "clientConfig": _client_config(handler, ca_bundle, url=url, service=service),
        }

    return {
        "apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingWebhookConfiguration",
        "metadata": {
            "name": WEBHOOK_CONFIGURATION,
            "labels": {"app.kubernetes.io/name": "webapp-operator"},
        },
        "webhooks": [
            webhook("validate", WEBHOOK_ID, PLURAL, ["CREATE", "UPDATE"], SPEC_CHANGED),
            webhook("validate-scale", SCALE_WEBHOOK_ID, f"{PLURAL}/scale", ["UPDATE"]),
        ],
    }
