"""`kubectl rollout restart` of a StatefulSet (an allowed pod-template annotation) is no fault,
though its rolling update deletes each ordinal's pod before it makes it again: for a moment
the ordinal is missing (`compare.judge.kinds.Kind.rolling`). A pod deleted without a rollout
is still a fault."""

from __future__ import annotations

import copy
from typing import Any

from compare.judge import Reading, as_given
from compare.judge.rollout import REVISION_HASH
from compare.run.evidence import TrialJudge, measure
from tests.run.builders import DEPLOYMENT, SELECTOR, pod

T0 = 1000.0
RESTARTED = {"kubectl.kubernetes.io/restartedAt": "t"}
STATEFULSET: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "StatefulSet",
    "metadata": {"name": "shop", "namespace": "ns"},
    "spec": {
        "replicas": 2,
        "serviceName": "shop",
        "selector": copy.deepcopy(DEPLOYMENT["spec"]["selector"]),
        "template": copy.deepcopy(DEPLOYMENT["spec"]["template"]),
    },
}
DESIRED = as_given([STATEFULSET])


def _sts(generation: int = 1, observed: int = 1, revision: str = "r1") -> dict[str, Any]:
    obj = copy.deepcopy(STATEFULSET)
    obj["metadata"].update(uid="sts-1", generation=generation, resourceVersion=str(generation))
    if generation > 1:
        obj["spec"]["template"]["metadata"]["annotations"] = dict(RESTARTED)
    obj["status"] = {"observedGeneration": observed, "updateRevision": revision}
    return obj


def _pod(ordinal: int, revision: str = "r1", **flags: Any) -> dict[str, Any]:
    made = pod(str(ordinal), "sts-1", labels={**SELECTOR, REVISION_HASH: revision}, **flags)
    made["metadata"]["uid"] = f"{revision}-{ordinal}"
    if revision != "r1":
        made["metadata"]["annotations"] = dict(RESTARTED)
    return made


def _reading(at: float, sts: dict[str, Any], *pods: dict[str, Any]) -> Reading:
    return Reading(
        at,
        {
            "StatefulSet": {"shop": sts},
            "Pod": {p["metadata"]["name"]: p for p in pods},
        },
    )


def _measure(steps: list[Reading]) -> Any:
    judge = TrialJudge(DESIRED, None, None, _reading(T0 - 1, _sts(), _pod(0), _pod(1)))
    obs = [judge.observe(r, r.at, "MODIFIED") for r in steps]
    return measure(
        judge,
        obs,
        injection_started=T0 - 0.01,
        injected_at=T0,
        window=5.0,
        settle=1.0,
        observed_until=steps[-1].at + 2.0,
    ), obs


def test_a_rolling_restart_of_a_statefulset_is_no_fault() -> None:
    new = _sts(2, 2, "r2")
    steps = [
        _reading(T0 + 0.1, _sts(2, 1), _pod(0), _pod(1)),
        _reading(T0 + 0.2, new, _pod(0), _pod(1, terminating=True)),
        _reading(T0 + 0.3, new, _pod(0)),  # ordinal 1 missing: deleted to be made again
        _reading(T0 + 0.4, new, _pod(0), _pod(1, "r2")),
        _reading(T0 + 0.5, new, _pod(1, "r2")),  # then ordinal 0
        _reading(T0 + 0.6, new, _pod(0, "r2"), _pod(1, "r2")),
    ]
    m, obs = _measure(steps)
    assert "statefulset.pods: shop-1 missing" in obs[2].problems  # judged, not holding
    assert not obs[2].holds and not obs[2].fault
    assert m.status == "no-fault", [o.fault for o in obs]


def test_a_pod_missing_without_a_rollout_is_a_fault() -> None:
    m, obs = _measure([_reading(T0 + 0.1, _sts(), _pod(0)), _reading(T0 + 0.3, _sts(), _pod(0))])
    assert "statefulset.pods: shop-1 missing" in obs[0].fault
    assert m.status == "not-healed"
