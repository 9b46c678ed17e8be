"""The WebApp types (the seed's `example.com/v1` WebApp), the single source of truth.

The operator's CRD schema and the chart's values.schema.json are generated from these
models, so a rule added here reaches both the Helm and the operator path.
"""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Annotated, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from compare.kube.namespace import DNS_LABEL

API_GROUP = "example.com"
API_VERSION = "v1"
KIND = "WebApp"
PLURAL = "webapps"

DEFAULT_PORT = 8080
MAX_REPLICAS = 50  # a ceiling the webhook enforces; the schema only says >= 0

# An image reference: [registry[:port]/]path[:tag][@digest], lower-case path components.
# This is the part of docker's reference grammar the schema cannot express.
_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_LABEL = r"[a-zA-Z0-9](?:[a-zA-Z0-9-]*[a-zA-Z0-9])?"
_DOMAIN = rf"{_LABEL}(?:\.{_LABEL})*(?::[0-9]+)?"
IMAGE_PATTERN = re.compile(
    rf"^(?:{_DOMAIN}/)?{_COMPONENT}(?:/{_COMPONENT})*"
    rf"(?::[\w][\w.-]{{0,127}})?(?:@sha256:[a-f0-9]{{64}})?$"
)
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*$"
# Env names the platform sets itself; a WebApp must not override them.
RESERVED_ENV_PREFIXES = ("KUBERNETES_",)
RESERVED_ENV_NAMES = frozenset({"PORT", "HOSTNAME"})
QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti)?$"
# The CRD's CEL rule bounds env for its cost estimator; the model holds the same bound.
MAX_ENV = 64
# metadata.name names the Service: a DNS-1035 label (letter first), at most 53 characters
# (a Helm release name's cap). The CRD checks the same with a CEL rule.
NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
MAX_NAME = 53
_SUFFIXES = {
    "": Decimal(1),
    "m": Decimal("0.001"),
    "k": Decimal(10) ** 3,
    "M": Decimal(10) ** 6,
    "G": Decimal(10) ** 9,
    "T": Decimal(10) ** 12,
    "Ki": Decimal(2) ** 10,
    "Mi": Decimal(2) ** 20,
    "Gi": Decimal(2) ** 30,
    "Ti": Decimal(2) ** 40,
}
_QUANTITY = re.compile(r"^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$")


def quantity_value(text: str) -> Decimal:
    """The value of a quantity matching QUANTITY_PATTERN (`250m` -> 0.25, `1Gi` -> 2**30)."""
    match = _QUANTITY.match(text)
    if match is None or match.group(2) not in _SUFFIXES:
        raise ValueError(f"{text!r} is not a quantity")
    return Decimal(match.group(1)) * _SUFFIXES[match.group(2)]


Quantity = Annotated[str, Field(pattern=QUANTITY_PATTERN, max_length=32)]


class _Strict(BaseModel):
    # strict: a wrong type is an error, never a coercion (`replicas: "3"`, `port: "8080"` and
    # `replicas: true` are refused, as the CRD's structural schema refuses them).
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, strict=True)


class EnvVar(_Strict):
    """One environment variable of the WebApp's container."""

    name: str = Field(pattern=ENV_NAME_PATTERN, min_length=1, max_length=128)
    value: str = Field(default="", max_length=4096)


class ResourceList(_Strict):
    cpu: Quantity | None = None
    memory: Quantity | None = None


class Resources(_Strict):
    """Container resource requests and limits, as Kubernetes quantities."""

    requests: ResourceList | None = None
    limits: ResourceList | None = None

    @model_validator(mode="after")
    def _limits_cover_requests(self) -> Self:
        # The CRD's CEL rules on spec.resources, in the same words.
        if self.requests is None or self.limits is None:
            return self
        for kind in ("cpu", "memory"):
            request, limit = getattr(self.requests, kind), getattr(self.limits, kind)
            if (
                request is not None
                and limit is not None
                and quantity_value(limit) < quantity_value(request)
            ):
                raise ValueError(
                    f"resources.limits.{kind} must be >= resources.requests.{kind}"
                    f" ({limit} < {request})"
                )
        return self


class WebAppSpec(_Strict):
    """Desired state of a WebApp: what both Helm and the operator must deploy."""

    replicas: int = Field(default=1, ge=0, description="Number of pods.")
    image: str = Field(
        min_length=1, max_length=255, description="Container image reference, e.g. myapp:v1."
    )
    port: int = Field(
        default=DEFAULT_PORT, ge=1, le=65535, description="Container port and Service port."
    )
    env: list[EnvVar] = Field(
        default_factory=list, max_length=MAX_ENV, description="Container environment."
    )
    resources: Resources | None = Field(default=None, description="Requests and limits.")

    @field_validator("image")
    @classmethod
    def _image_reference(cls, value: str) -> str:
        if not IMAGE_PATTERN.match(value):
            raise ValueError(f"{value!r} is not a valid image reference (e.g. registry/app:v1)")
        return value

    @field_validator("env")
    @classmethod
    def _env_rules(cls, value: list[EnvVar]) -> list[EnvVar]:
        seen: set[str] = set()
        for var in value:
            if var.name in seen:
                raise ValueError(f"duplicate env name {var.name!r}")
            seen.add(var.name)
        return value


def policy_violations(spec: WebAppSpec) -> list[str]:
    """Rules beyond the schema, enforced by the operator's admission webhook.

    Kept apart from the model so an existing object that breaks a newer policy still loads.
    """
    problems = []
    if spec.replicas > MAX_REPLICAS:
        problems.append(f"spec.replicas: {spec.replicas} exceeds the ceiling of {MAX_REPLICAS}")
    for var in spec.env:
        if var.name in RESERVED_ENV_NAMES or var.name.startswith(RESERVED_ENV_PREFIXES):
            problems.append(f"spec.env: {var.name!r} is reserved by the platform")
    return problems


class Metadata(_Strict):
    model_config = ConfigDict(extra="ignore", frozen=True, strict=True)

    name: str = Field(pattern=NAME_PATTERN, max_length=MAX_NAME)
    namespace: str | None = Field(default=None, pattern=DNS_LABEL)


class WebApp(_Strict):
    """A WebApp manifest: the operator's CR and the source of the Helm values."""

    api_version: str = Field(alias="apiVersion", pattern=rf"^{re.escape(API_GROUP)}/v1$")
    kind: str = Field(pattern=rf"^{KIND}$")
    metadata: Metadata
    spec: WebAppSpec

    @property
    def name(self) -> str:
        return self.metadata.name
