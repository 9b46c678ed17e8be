"""Pure status computation: the WebApp's status from its live Deployment.

`compute_status` is a function of what was observed (the WebApp, its live Deployment, the
reconcile error if any) and the previous status (for lastTransitionTime): the same inputs give
the same dict, so the reconciler can write the status only when it changed and two reconciles
never ping-pong.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from webapp_operator.builders import selector_string
from webapp_operator.types import Condition, ConditionType, Phase, WebAppStatus

__all__ = ["UNOBSERVED_GRACE_S", "Failure", "compute_status", "rfc3339", "unobserved_for"]


@dataclass(frozen=True)
class Failure:
    """Why the last reconcile failed: a CamelCase reason and a one-line message."""

    reason: str
    message: str


@dataclass(frozen=True)
class _Rollout:
    """The facts about the live Deployment the conditions are derived from."""

    exists: bool
    desired: int
    replicas: int = 0
    ready: int = 0
    updated: int = 0
    available: int = 0
    observed: bool = False  # the Deployment controller has seen its latest spec
    stuck: str | None = None  # ProgressDeadlineExceeded / ReplicaFailure message

    @property
    def complete(self) -> bool:
        return (
            self.exists
            and self.observed
            and self.desired == self.updated == self.ready == self.available == self.replicas
        )

    def counts(self) -> str:
        return (
            f"{self.ready}/{self.desired} ready, {self.updated}/{self.desired} updated, "
            f"{self.available}/{self.desired} available"
        )


# How long a status is not written for a Deployment its controller has not yet seen at all.
UNOBSERVED_GRACE_S = 10.0


def unobserved_for(deployment: Mapping[str, Any] | None, now: datetime) -> float | None:
    """Seconds left in which a status computed from `deployment` says nothing new: a
    Deployment created less than `UNOBSERVED_GRACE_S` ago that its controller has not
    observed yet (no `status.observedGeneration`). Its first observation, milliseconds later,
    is a watch event that wakes the next reconcile, which writes the status: a thousand new
    WebApps cost a status write each instead of two (an empty "0/N" one first). None: write
    now (observed, older, no Deployment, or a creation time ahead of this clock)."""
    if not deployment or (deployment.get("status") or {}).get("observedGeneration"):
        return None
    created = (deployment.get("metadata") or {}).get("creationTimestamp")
    if not isinstance(created, str):
        return None
    try:
        at = datetime.strptime(created, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None
    age = (now - at).total_seconds()
    # A second more: the timestamp is cut to the second.
    left = UNOBSERVED_GRACE_S + 1.0 - age
    return left if age >= 0.0 and left > 0.0 else None


def rfc3339(moment: datetime) -> str:
    """metav1.Time: seconds precision, UTC, `Z` suffix."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _rollout(desired: int, deployment: Mapping[str, Any] | None) -> _Rollout:
    if deployment is None:
        return _Rollout(exists=False, desired=desired)
    status = deployment.get("status") or {}
    meta = deployment.get("metadata") or {}
    stuck = None
    for cond in status.get("conditions") or []:
        if cond.get("type") == "Progressing" and cond.get("reason") == "ProgressDeadlineExceeded":
            stuck = cond.get("message") or "progress deadline exceeded"
        if cond.get("type") == "ReplicaFailure" and cond.get("status") == "True":
            stuck = cond.get("message") or "replica failure"
    return _Rollout(
        exists=True,
        desired=desired,
        replicas=status.get("replicas") or 0,
        ready=status.get("readyReplicas") or 0,
        updated=status.get("updatedReplicas") or 0,
        available=status.get("availableReplicas") or 0,
        observed=(status.get("observedGeneration") or 0) >= (meta.get("generation") or 0)
        and (deployment.get("spec") or {}).get("replicas") == desired,
        stuck=stuck,
    )


def compute_status(
    webapp: Mapping[str, Any],
    deployment: Mapping[str, Any] | None,
    *,
    failure: Failure | None = None,
    now: datetime,
    deployment_known: bool = True,
) -> dict[str, Any]:
    """The status the WebApp should show (API JSON), given what was observed.

    `deployment_known=False`: the reconcile failed before it got to the Deployment, so nothing
    new is known about it; the last reported counts, Available and Progressing stay as they
    were (never rewritten from missing information), only Degraded reports the failure.
    """
    meta = webapp["metadata"]
    generation = meta.get("generation") or 0
    desired = (webapp.get("spec") or {}).get("replicas", 1)
    previous = _previous_conditions(webapp)
    if not deployment_known and webapp.get("status"):
        return _keep_last_known(webapp, previous, failure, now)
    rollout = _rollout(desired, deployment)

    if rollout.exists:
        available = rollout.available >= desired
        available_reason = "ReplicasAvailable" if available else "ReplicasUnavailable"
        available_msg = rollout.counts()
    else:
        available, available_reason, available_msg = False, "DeploymentMissing", "no Deployment"

    if rollout.stuck is not None:
        progressing, progress_reason, progress_msg = (
            False,
            "ProgressDeadlineExceeded",
            rollout.stuck,
        )
    elif rollout.complete:
        progressing, progress_reason, progress_msg = False, "RolloutComplete", rollout.counts()
    elif rollout.exists:
        progressing, progress_reason, progress_msg = True, "RollingOut", rollout.counts()
    else:
        progressing, progress_reason, progress_msg = True, "Creating", "creating the Deployment"

    degraded_condition = _degraded(failure, rollout.stuck)
    degraded = degraded_condition["status"] == "True"
    conditions = [
        _condition(ConditionType.AVAILABLE, available, available_reason, available_msg),
        _condition(ConditionType.PROGRESSING, progressing, progress_reason, progress_msg),
        degraded_condition,
    ]
    stamped = [_stamp(cond, previous, generation, now) for cond in conditions]

    if degraded:
        phase = Phase.DEGRADED
    elif rollout.complete and available:
        phase = Phase.RUNNING
    elif not rollout.exists or (rollout.ready == 0 and desired > 0):
        phase = Phase.PENDING
    else:
        phase = Phase.PROGRESSING

    status = WebAppStatus.model_validate(
        {
            "replicas": rollout.replicas,
            "readyReplicas": rollout.ready,
            "phase": phase,
            "conditions": stamped,
            "observedGeneration": generation,
            "selector": selector_string(meta["name"]),
        }
    )
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)


def _keep_last_known(
    webapp: Mapping[str, Any],
    previous: Mapping[str, Mapping[str, Any]],
    failure: Failure | None,
    now: datetime,
) -> dict[str, Any]:
    last = dict(webapp.get("status") or {})
    generation = webapp["metadata"].get("generation") or 0
    degraded = _degraded(failure, None)
    conditions = [
        dict(previous[kind.value])
        for kind in (ConditionType.AVAILABLE, ConditionType.PROGRESSING)
        if kind.value in previous
    ]
    conditions.append(
        _stamp(degraded, previous, generation, now).model_dump(
            mode="json", by_alias=True, exclude_none=True
        )
    )
    status = WebAppStatus.model_validate(
        {
            **last,
            "phase": Phase.DEGRADED if failure is not None else last.get("phase", Phase.PENDING),
            "conditions": conditions,
            "selector": selector_string(webapp["metadata"]["name"]),
        }
    )
    return status.model_dump(mode="json", by_alias=True, exclude_none=True)


def _degraded(failure: Failure | None, stuck: str | None) -> dict[str, str]:
    """Degraded: the reconcile's failure first, then a stuck rollout."""
    if failure is not None:
        return _condition(ConditionType.DEGRADED, True, failure.reason, failure.message)
    if stuck is not None:
        return _condition(ConditionType.DEGRADED, True, "RolloutStuck", stuck)
    return _condition(ConditionType.DEGRADED, False, "AsExpected", "reconciled")


def _condition(kind: ConditionType, value: bool, reason: str, message: str) -> dict[str, str]:
    return {
        "type": kind.value,
        "status": "True" if value else "False",
        "reason": reason,
        "message": message,
    }


def _previous_conditions(webapp: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    status = webapp.get("status") or {}
    return {c["type"]: c for c in status.get("conditions") or [] if isinstance(c, Mapping)}


def _stamp(
    cond: dict[str, str],
    previous: Mapping[str, Mapping[str, Any]],
    generation: int,
    now: datetime,
) -> Condition:
    """lastTransitionTime moves only when the condition's status does (metav1 semantics)."""
    before = previous.get(cond["type"])
    if before is not None and before.get("status") == cond["status"]:
        since = str(before.get("lastTransitionTime") or rfc3339(now))
    else:
        since = rfc3339(now)
    return Condition.model_validate(
        {**cond, "lastTransitionTime": since, "observedGeneration": generation}
    )
