"""Pure status computation: phases, conditions, and lastTransitionTime semantics."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from webapp_operator.status import UNOBSERVED_GRACE_S, Failure, compute_status, unobserved_for

T0 = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)


def _webapp(replicas: int = 3, generation: int = 2, status: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "metadata": {"name": "shop", "namespace": "ns", "generation": generation},
        "spec": {"replicas": replicas, "image": "shop:v1"},
    }
    if status is not None:
        body["status"] = status
    return body


def _deployment(
    replicas: int = 3,
    *,
    ready: int = 3,
    updated: int = 3,
    available: int = 3,
    total: int | None = None,
    observed: bool = True,
    conditions: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"generation": 5},
        "spec": {"replicas": replicas},
        "status": {
            "observedGeneration": 5 if observed else 4,
            "replicas": replicas if total is None else total,
            "readyReplicas": ready,
            "updatedReplicas": updated,
            "availableReplicas": available,
            "conditions": conditions or [],
        },
    }


def _conditions(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {c["type"]: (c["status"], c["reason"]) for c in status["conditions"]}


def test_running_when_every_pod_is_updated_ready_and_available() -> None:
    status = compute_status(_webapp(), _deployment(), now=T0)
    assert status["phase"] == "Running"
    assert (status["replicas"], status["readyReplicas"], status["observedGeneration"]) == (3, 3, 2)
    assert status["selector"] == "app.kubernetes.io/instance=shop,app.kubernetes.io/name=webapp"
    assert _conditions(status) == {
        "Available": ("True", "ReplicasAvailable"),
        "Progressing": ("False", "RolloutComplete"),
        "Degraded": ("False", "AsExpected"),
    }
    for cond in status["conditions"]:
        assert cond["lastTransitionTime"] == "2026-01-01T12:00:00Z"
        assert cond["observedGeneration"] == 2


def test_pending_without_a_deployment_or_a_ready_pod() -> None:
    none = compute_status(_webapp(), None, now=T0)
    assert none["phase"] == "Pending"
    assert _conditions(none)["Available"] == ("False", "DeploymentMissing")
    assert _conditions(none)["Progressing"] == ("True", "Creating")
    fresh = compute_status(_webapp(), _deployment(ready=0, available=0), now=T0)
    assert fresh["phase"] == "Pending"


def test_progressing_while_rolling_out() -> None:
    rolling = compute_status(_webapp(), _deployment(updated=1, total=4), now=T0)
    assert rolling["phase"] == "Progressing"
    assert _conditions(rolling)["Progressing"] == ("True", "RollingOut")
    unobserved = compute_status(_webapp(), _deployment(observed=False), now=T0)
    assert unobserved["phase"] == "Progressing"


def test_scaled_deployment_is_not_running_until_it_matches_the_spec() -> None:
    # Someone scaled the Deployment to 1: it is complete by its own standard, not by ours.
    status = compute_status(
        _webapp(replicas=3), _deployment(replicas=1, ready=1, updated=1, available=1), now=T0
    )
    assert status["phase"] == "Progressing"
    assert _conditions(status)["Available"] == ("False", "ReplicasUnavailable")


def test_degraded_on_reconcile_failure_and_on_stuck_rollout() -> None:
    failed = compute_status(
        _webapp(), _deployment(), failure=Failure("ApplyFailed", "403 forbidden"), now=T0
    )
    assert failed["phase"] == "Degraded"
    degraded = next(c for c in failed["conditions"] if c["type"] == "Degraded")
    assert (degraded["status"], degraded["reason"], degraded["message"]) == (
        "True",
        "ApplyFailed",
        "403 forbidden",
    )
    stuck = compute_status(
        _webapp(),
        _deployment(
            ready=1,
            available=1,
            conditions=[
                {
                    "type": "Progressing",
                    "status": "False",
                    "reason": "ProgressDeadlineExceeded",
                    "message": "ReplicaSet has timed out progressing.",
                }
            ],
        ),
        now=T0,
    )
    assert stuck["phase"] == "Degraded"
    assert _conditions(stuck)["Progressing"] == ("False", "ProgressDeadlineExceeded")
    assert _conditions(stuck)["Degraded"] == ("True", "RolloutStuck")


def test_zero_replicas_is_running() -> None:
    status = compute_status(
        _webapp(replicas=0), _deployment(0, ready=0, updated=0, available=0), now=T0
    )
    assert status["phase"] == "Running"


def test_same_inputs_same_status_so_no_rewrite() -> None:
    first = compute_status(_webapp(), _deployment(), now=T0)
    later = compute_status(_webapp(status=first), _deployment(), now=T0 + timedelta(minutes=5))
    assert later == first


def test_last_transition_time_moves_only_with_the_status() -> None:
    before = compute_status(_webapp(), _deployment(ready=1, available=1, updated=1), now=T0)
    after = compute_status(_webapp(status=before), _deployment(), now=T0 + timedelta(seconds=42))
    times = {c["type"]: c["lastTransitionTime"] for c in after["conditions"]}
    assert times["Available"] == "2026-01-01T12:00:42Z"  # False -> True
    assert times["Progressing"] == "2026-01-01T12:00:42Z"  # True -> False
    assert times["Degraded"] == "2026-01-01T12:00:00Z"  # False all along


def test_a_new_deployment_its_controller_has_not_seen_defers_the_status() -> None:
    new = {"metadata": {"creationTimestamp": "2026-01-01T12:00:00Z"}, "spec": {"replicas": 3}}
    assert unobserved_for(new, T0 + timedelta(seconds=2)) == UNOBSERVED_GRACE_S + 1 - 2
    # Seen by its controller (even with nothing ready): the status says something.
    seen = {**new, "status": {"observedGeneration": 1}}
    assert unobserved_for(seen, T0 + timedelta(seconds=2)) is None
    # Never seen within the grace: written anyway (a controller-manager down says so).
    assert unobserved_for(new, T0 + timedelta(seconds=UNOBSERVED_GRACE_S + 1)) is None
    # A creation time ahead of this clock, none, or unreadable: written now.
    assert unobserved_for(new, T0 - timedelta(seconds=1)) is None
    assert unobserved_for(None, T0) is None
    assert unobserved_for({"metadata": {"creationTimestamp": "yesterday"}}, T0) is None
    assert unobserved_for({"metadata": {}}, T0) is None
