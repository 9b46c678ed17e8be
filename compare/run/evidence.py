"""From live snapshots to a verdict: the healing rule of one fault and the measured times.

Pure functions over `Snapshot`s and timestamps; no cluster access, so every rule is unit-tested.

Healed means: the desired state holds (`compare.chaos.state.problems`: owned fields, Ready pods
of the current template, nothing stale) AND the fault's own rule:
- a deleted Deployment/Service/ReplicaSet is back only as an object with a NEW uid;
- deleted pods are replaced only by pods with new uids (pod counts alone are never evidence);
- a drifted field is back to its value from before the injection.
The heal time is the end of the first reading, started after the injection, in which all of
that held; the resolution is the width of the interval the heal happened in.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from compare.chaos.fields import read_path
from compare.chaos.state import Snapshot, problems
from compare.results import Evidence, ObjectUids
from compare.webapp import DesiredState

UID_KINDS = ("deployment", "service", "replicaset")
PRESENT, ABSENT, RECREATED = "present", "absent", "recreated"
# The smallest resolution results.json accepts (it must be > 0).
MIN_RESOLUTION = 1e-6


@dataclass(frozen=True)
class Observation:
    """What one reading showed: why the desired state did not hold (empty: healed)."""

    started: float
    at: float
    problems: tuple[str, ...]
    value: Any  # the tracked field (or presence / ready count)
    uids: dict[str, Any]
    ready: int
    partial: bool = False  # pods and ReplicaSets were not read

    @property
    def healed(self) -> bool:
        return not self.problems


class Judge:
    """The healing rule of one trial, fixed by the state before the injection."""

    def __init__(
        self,
        desired: DesiredState,
        target: str | None,
        field: str | None,
        baseline: Snapshot,
    ) -> None:
        self.desired = desired
        self.target = target
        self.field = field
        self.uids_before = baseline.uids()
        self.before = self.value_of(baseline)
        self.baseline_problems = tuple(problems(baseline, desired))

    def value_of(self, snap: Snapshot) -> Any:
        if self.field is not None:
            return read_path(self.field, snap.objects())
        if self.target in UID_KINDS:
            return PRESENT if snap.uids()[self.target] else ABSENT
        if self.target == "pod":
            return len(snap.ready_pods())
        return None

    def observe(self, snap: Snapshot) -> Observation:
        found = problems(snap, self.desired)
        uids = snap.uids()
        if self.field is None and self.target in UID_KINDS:
            now = uids[self.target]
            if now is not None and now == self.uids_before[self.target]:
                found.append(
                    f"{self.target}: uid {now} is the object from before the fault;"
                    " a deleted object counts only when one with a new uid is back"
                )
        if self.target == "pod":
            ready = set(snap.objects()["pods"]["uids"])
            if ready and ready <= set(self.uids_before["pods"]):
                found.append("pods: every Ready pod is from before the fault; no replacement")
        value = self.value_of(snap)
        if self.field is not None and value != self.before and not found:
            # Only when nothing else differs: an owned field is already named by compare_live.
            found.append(f"{self.field}: want {self.before!r}, got {value!r}")
        return Observation(
            started=snap.started,
            at=snap.at,
            problems=tuple(found),
            value=value,
            uids=uids,
            ready=len(snap.ready_pods()),
            partial=snap.partial,
        )


@dataclass(frozen=True)
class Measurement:
    status: Literal["healed", "not-healed"]
    time_to_heal: float | None
    resolution: float
    during: Any
    final: Observation


def first_heal(
    observations: Sequence[Observation], injected_at: float, window: float
) -> Observation | None:
    """The first reading started after the injection that saw the fault healed in time."""
    for obs in observations:
        if obs.started >= injected_at and obs.healed and obs.at - injected_at <= window:
            return obs
    return None


def measure(
    judge: Judge,
    observations: Sequence[Observation],
    injected_at: float,
    window: float,
    *,
    reported: Any = None,
    has_reported: bool = False,
) -> Measurement:
    """The verdict over the readings of one trial.

    `reported` is what the injection action said it stored (our drift actions return it):
    the value right after the injection even if a controller reverted it before any reading.
    """
    after = [o for o in observations if o.started >= injected_at]
    if not after:
        raise ValueError("no reading after the injection")
    healed = first_heal(after, injected_at, window)
    end = healed if healed is not None else after[-1]
    span = [o for o in after if o.at <= end.at]
    return Measurement(
        status="healed" if healed is not None else "not-healed",
        time_to_heal=None if healed is None else healed.at - injected_at,
        resolution=_resolution(observations, healed, injected_at, after),
        during=_during(judge, span, reported, has_reported),
        final=end,
    )


def _resolution(
    observations: Sequence[Observation],
    healed: Observation | None,
    injected_at: float,
    after: Sequence[Observation],
) -> float:
    if healed is not None:
        # The heal happened after the previous reading (or the injection) and before this one.
        earlier = [o.at for o in observations if o.at < healed.at]
        since = max([injected_at, *earlier])
        return max(healed.at - since, MIN_RESOLUTION)
    ends = [injected_at, *(o.at for o in after)]
    gaps = [b - a for a, b in itertools.pairwise(ends)]
    return max(max(gaps, default=0.0), MIN_RESOLUTION)


def _during(judge: Judge, span: Sequence[Observation], reported: Any, has_reported: bool) -> Any:
    if has_reported:
        return reported
    if not span:
        return None
    if judge.field is None and judge.target in UID_KINDS:
        if any(o.value == ABSENT for o in span):
            return ABSENT
        changed = any(o.uids[judge.target] != judge.uids_before[judge.target] for o in span)
        return RECREATED if changed else PRESENT
    if judge.field in (None, "pods.ready") and judge.target == "pod":
        full = [o.ready for o in span if not o.partial]
        return min(full) if full else None
    for obs in span:
        if obs.value != judge.before:
            return obs.value
    return span[0].value


def recreated(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Kinds whose uid changed (a new object), plus `pod` when new pods appeared."""
    kinds = [k for k in UID_KINDS if after.get(k) and before.get(k) and after[k] != before[k]]
    if set(after.get("pods") or []) - set(before.get("pods") or []):
        kinds.append("pod")
    return kinds


def build_evidence(
    judge: Judge,
    measurement: Measurement,
    *,
    detected_by: str | None = None,
    extra: dict[str, Any] | None = None,
) -> Evidence:
    final = measurement.final
    return Evidence(
        target=judge.target,
        field=judge.field,
        before=judge.before,
        during=measurement.during,
        after=final.value,
        uids_before=ObjectUids(**judge.uids_before),
        uids_after=ObjectUids(**final.uids),
        recreated=recreated(judge.uids_before, final.uids),
        ready_pods=final.ready,
        desired_replicas=judge.desired.replicas,
        mismatches_at_end=list(final.problems),
        detected_by=detected_by,
        **(extra or {}),
    )
