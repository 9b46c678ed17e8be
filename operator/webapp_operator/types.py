"""The WebApp API types: the spec (shared with the Helm path) and the operator's status.

This is kubebuilder's `api/v1/webapp_types.go`: the CRD schema is generated from these models
(`python -m webapp_operator.manifests`), never written by hand. The spec lives in
`compare.webapp.spec` because the Helm chart's values schema is generated from it too; the
status is the operator's alone.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from compare.webapp import WebAppSpec

__all__ = ["Condition", "ConditionType", "Phase", "WebAppSpec", "WebAppStatus"]


class Phase(StrEnum):
    """A one-word summary for `kubectl get`; the conditions carry the detail."""

    PENDING = "Pending"  # no child yet, or no pod ready yet
    PROGRESSING = "Progressing"  # a rollout or a scale is under way
    RUNNING = "Running"  # every desired pod is updated, ready and available
    DEGRADED = "Degraded"  # reconcile failed or the rollout is stuck
    DELETING = "Deleting"  # the finalizer's cleanup runs


class ConditionType(StrEnum):
    AVAILABLE = "Available"
    PROGRESSING = "Progressing"
    DEGRADED = "Degraded"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Condition(_Model):
    """metav1.Condition, field for field (same names, patterns and limits)."""

    type: str = Field(
        pattern=r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
        r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
        max_length=316,
        description="Condition type: Available, Progressing or Degraded.",
    )
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(
        pattern=r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$",
        min_length=1,
        max_length=1024,
        description="CamelCase reason for the last transition.",
    )
    message: str = Field(max_length=32768, description="Human-readable detail.")
    last_transition_time: str = Field(
        alias="lastTransitionTime",
        json_schema_extra={"format": "date-time"},
        description="When the status last changed (RFC 3339).",
    )
    observed_generation: int | None = Field(
        default=None,
        alias="observedGeneration",
        ge=0,
        description="metadata.generation the condition was computed for.",
    )


class WebAppStatus(_Model):
    """Observed state, written by the operator through the status subresource."""

    replicas: int = Field(default=0, ge=0, description="Pods of the Deployment (scale status).")
    ready_replicas: int = Field(default=0, ge=0, alias="readyReplicas", description="Ready pods.")
    phase: Phase = Field(default=Phase.PENDING, description="One-word summary of the state.")
    conditions: list[Condition] = Field(
        default_factory=list,
        max_length=8,
        json_schema_extra={
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["type"],
        },
        description="Available, Progressing and Degraded, as metav1.Condition.",
    )
    observed_generation: int = Field(
        default=0,
        ge=0,
        alias="observedGeneration",
        description="metadata.generation of the spec this status reflects.",
    )
    selector: str = Field(
        default="", description="Label selector of the pods (for the scale subresource)."
    )
