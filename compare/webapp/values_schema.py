"""The chart's values.schema.json, generated: the WebApp spec part comes from `spec_schema()`.

Run `python -m compare.webapp.values_schema` to (re)write charts/webapp/values.schema.json, or
with `--check` to exit 1 when the committed file differs from what the model implies. Helm
validates values against this file on lint, template, install and upgrade, so a bad value is
rejected by helm itself, with the same rules the WebApp model applies.
"""

from __future__ import annotations

import copy
import json
import sys
from typing import Any

from compare.kube.namespace import DNS_LABEL
from compare.paths import CHARTS_DIR
from compare.webapp.schemas import Schema, schema_file_main, spec_schema
from compare.webapp.spec import IMAGE_PATTERN, MAX_NAME, NAME_PATTERN

VALUES_SCHEMA_PATH = CHARTS_DIR / "webapp" / "values.schema.json"

# WebApp spec field -> chart values key; `to_helm_values` emits exactly these (plus
# fullnameOverride).
SPEC_TO_VALUES = {
    "replicas": "replicaCount",
    "image": "image",
    "port": "port",
    "env": "env",
    "resources": "resources",
}

_DNS_LABEL = f"^$|{DNS_LABEL}"  # empty: the chart's default
_LABEL_VALUE = r"^$|^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
# The chart owns these label prefixes on the pods; a podLabels entry must not shadow them.
_OWNED_LABELS = r"^(app\.kubernetes\.io|helm\.sh)/"


def _obj(
    properties: dict[str, Schema], *, required: list[str] | None = None, **extra: Any
) -> Schema:
    schema: Schema = {"type": "object", "additionalProperties": False, "properties": properties}
    if required:
        schema["required"] = required
    schema.update(extra)
    return schema


def _int(minimum: int | None = None, maximum: int | None = None) -> Schema:
    schema: Schema = {"type": "integer"}
    if minimum is not None:
        schema["minimum"] = minimum
    if maximum is not None:
        schema["maximum"] = maximum
    return schema


_STRING: Schema = {"type": "string"}
_BOOL: Schema = {"type": "boolean"}
_STRING_MAP: Schema = {"type": "object", "additionalProperties": {"type": "string"}}


def _image(description: str) -> Schema:
    # The model checks the reference with a validator the JSON schema cannot see; the pattern
    # is the same regular expression, so helm rejects what the model rejects.
    return {
        "type": "string",
        "minLength": 1,
        "maxLength": 255,
        "pattern": IMAGE_PATTERN.pattern,
        "description": description,
    }


def _security_schemas() -> tuple[Schema, Schema]:
    """Pod and container security contexts: the Kubernetes fields, typed, nothing else."""
    # A seccomp profile and an AppArmor profile have the same fields.
    profile = _obj(
        {
            "type": {"enum": ["RuntimeDefault", "Unconfined", "Localhost"]},
            "localhostProfile": _STRING,
        },
        required=["type"],
    )
    se_linux = _obj({"level": _STRING, "role": _STRING, "type": _STRING, "user": _STRING})
    windows = _obj(
        {
            "gmsaCredentialSpec": _STRING,
            "gmsaCredentialSpecName": _STRING,
            "hostProcess": _BOOL,
            "runAsUserName": _STRING,
        }
    )
    user_fields: dict[str, Schema] = {
        "runAsNonRoot": _BOOL,
        "runAsUser": _int(0),
        "runAsGroup": _int(0),
        "seccompProfile": profile,
        "appArmorProfile": profile,
        "seLinuxOptions": se_linux,
        "windowsOptions": windows,
    }
    pod = _obj(
        {
            **user_fields,
            "fsGroup": _int(0),
            "fsGroupChangePolicy": {"enum": ["OnRootMismatch", "Always"]},
            "seLinuxChangePolicy": {"enum": ["MountOption", "Recursive"]},
            "supplementalGroups": {"type": "array", "items": _int(0)},
            "supplementalGroupsPolicy": {"enum": ["Merge", "Strict"]},
            "sysctls": {
                "type": "array",
                "items": _obj({"name": _STRING, "value": _STRING}, required=["name", "value"]),
            },
        },
        description="Pod-level security context (Kubernetes PodSecurityContext).",
    )
    container = _obj(
        {
            **user_fields,
            "allowPrivilegeEscalation": _BOOL,
            "privileged": _BOOL,
            "readOnlyRootFilesystem": _BOOL,
            "procMount": {"enum": ["Default", "Unmasked"]},
            "capabilities": _obj(
                {
                    "add": {"type": "array", "items": _STRING},
                    "drop": {"type": "array", "items": _STRING},
                }
            ),
        },
        description="Container-level security context (Kubernetes SecurityContext).",
    )
    return pod, container


def _probes_schema() -> Schema:
    timing = _obj(
        {
            "initialDelaySeconds": _int(0),
            "periodSeconds": _int(1),
            "timeoutSeconds": _int(1),
            "failureThreshold": _int(1),
        }
    )
    return _obj(
        {
            "enabled": {**_BOOL, "description": "Render the readiness and liveness probes."},
            "type": {
                "enum": ["httpGet", "tcpSocket"],
                "description": "httpGet sends GET <path> to the http port; tcpSocket connects.",
            },
            "path": {"type": "string", "pattern": "^/", "description": "Path of httpGet probes."},
            "readiness": timing,
            "liveness": timing,
        },
        required=["enabled", "type", "path", "readiness", "liveness"],
        description="Readiness and liveness probes on the http port.",
    )


def _tolerations_schema() -> Schema:
    toleration = _obj(
        {
            "key": _STRING,
            "operator": {"enum": ["Exists", "Equal"]},
            "value": _STRING,
            "effect": {"enum": ["", "NoSchedule", "PreferNoSchedule", "NoExecute"]},
            "tolerationSeconds": {"type": "integer"},
        }
    )
    return {"type": "array", "items": toleration, "description": "Tolerations of the pods."}


def values_schema() -> Schema:
    """The strict JSON schema of charts/webapp/values.yaml."""
    spec = spec_schema()["properties"]
    from_spec = {SPEC_TO_VALUES[key]: copy.deepcopy(value) for key, value in spec.items()}
    from_spec["image"] = _image(spec["image"].get("description", "Container image reference."))
    pod_security, container_security = _security_schemas()
    name_override = {"type": "string", "maxLength": 63, "pattern": _DNS_LABEL}
    properties: dict[str, Schema] = {
        "nameOverride": {**name_override, "description": "Replaces the chart name in names."},
        # The WebApp's metadata.name: the CRD's CEL rule (DNS-1035, at most 53), said here too.
        "fullnameOverride": {
            "type": "string",
            "maxLength": MAX_NAME,
            "pattern": f"^$|{NAME_PATTERN}",
            "description": "The full name of the objects.",
        },
        **from_spec,
        "imagePullPolicy": {"enum": ["Always", "IfNotPresent", "Never"]},
        "podAnnotations": {**_STRING_MAP, "description": "Extra annotations on the pods."},
        "podLabels": {
            "type": "object",
            "additionalProperties": {"type": "string", "maxLength": 63, "pattern": _LABEL_VALUE},
            # A `false` schema for the chart's own keys (helm misplaces propertyNames errors).
            "patternProperties": {_OWNED_LABELS: False},
            "description": "Extra labels on the pods; app.kubernetes.io/* is the chart's own.",
        },
        "podSecurityContext": pod_security,
        "securityContext": container_security,
        "probes": _probes_schema(),
        "nodeSelector": {**_STRING_MAP, "description": "Node labels the pods must match."},
        "tolerations": _tolerations_schema(),
        "tests": _obj(
            {"image": _image("Image of the `helm test` pod (needs wget).")},
            required=["image"],
            description="The helm test hook.",
        ),
    }
    return {
        "$comment": (
            "Generated by `python -m compare.webapp.values_schema` from the WebApp model "
            "(compare/webapp/spec.py); do not edit by hand."
        ),
        "title": "Values of the webapp chart",
        **_obj(
            properties,
            required=["replicaCount", "image", "port", "imagePullPolicy", "probes", "tests"],
        ),
    }


def render() -> str:
    return json.dumps(values_schema(), indent=2) + "\n"


def main(argv: list[str] | None = None) -> int:
    return schema_file_main(
        "compare.webapp.values_schema",
        "Write (or --check) charts/webapp/values.schema.json from the WebApp model.",
        VALUES_SCHEMA_PATH,
        render,
        argv,
    )


if __name__ == "__main__":
    sys.exit(main())
