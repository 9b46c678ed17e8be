"""From one trial's readings to its verdict: the fault's own rule, a fault seen, a settled heal.

Pure functions over `Observation`s and timestamps; no cluster access, so every rule is
unit-tested. A reading "holds" when the judge finds nothing (`compare.judge.problems`: every
desired object closed-world, the rollout of the desired template complete) AND the fault's own
rule holds:
- a deleted Deployment/Service/ReplicaSet is back only as an object with a NEW uid;
- deleted pods are replaced only by pods with new uids (pod counts alone are never evidence).

The verdict (`measure`):
- the fault must be SEEN: a reading after the injection started that does not hold (the event
  that showed it), or the injection action reporting a changed value of a judged field. An
  injection that changed nothing the judge sees is `no-fault`, never a heal;
- the heal must SETTLE: after the first reading that holds again, no reading that does not
  hold for `settle` seconds. A relapse inside that stretch is a flap: recorded, and the clock
  starts again at the next heal. time-to-heal is the start of the settled stretch; the first
  heal is reported beside it. The settled heal must start within the heal window.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from compare import approaches
from compare.chaos.fields import parse_path, read_path
from compare.judge import (
    DesiredObjects,
    Reading,
    judged_field,
    only_pending,
    problems,
    terminating,
    uid,
    workload,
)
from compare.judge.endpoints import foreign_slices
from compare.judge.kinds import KINDS, WORKLOAD_KINDS, Kind, pod_template
from compare.judge.verdict import current_ready, pod_drift
from compare.results import CrossCheck, Evidence, FaultSeen, Flap, ObjectUids
from compare.results.writers import Write, restoring_writers, writes_of

PRESENT, ABSENT, RECREATED = "present", "absent", "recreated"


@dataclass(frozen=True)
class View:
    """A reading seen through one app's desired objects: each of them live (by its root, and
    by the kind's name the first of each kind, the main workload's and Service's their own:
    `DesiredObjects.main`), its workload's current ReplicaSet, its pods."""

    objects: Mapping[str, dict[str, Any] | None]
    replicaset: dict[str, Any] | None
    pods: list[dict[str, Any]]
    ready: list[dict[str, Any]]  # Ready pods of the workload's current template
    # Names of the EndpointSlices someone else added for the app's Services.
    foreign_slices: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, desired: DesiredObjects, reading: Reading) -> View:
        live, replicaset, pods = workload(desired, reading)
        objects: dict[str, dict[str, Any] | None] = {"deployment": None, "service": None}
        for item in reversed(desired.items):  # the first of a kind wins its bare name
            obj = reading.get(item.key, item.name)
            objects[item.root] = obj
            if item.namespace is None:
                objects[item.kind.lower()] = obj
        # ... but the app's main workload and Service win theirs: the parts the faults act on.
        for main in desired.main:
            if main is not None:
                objects[main.kind.lower()] = reading.get(main.key, main.name)
        revisions = reading.all("ControllerRevision")
        slices = sorted(
            str((s.get("metadata") or {}).get("name"))
            for found in foreign_slices(desired, reading).values()
            for s in found
        )
        ready = current_ready(live, replicaset, pods, revisions)
        return cls(objects, replicaset, pods, ready, slices)

    def uids(self) -> dict[str, Any]:
        live = [p for p in self.pods if not terminating(p)]
        found = {root: uid(obj) for root, obj in self.objects.items() if "/" not in root}
        return {
            **found,
            "replicaset": uid(self.replicaset),
            "pods": sorted(uid(p) or "" for p in live),
        }

    def roots(self) -> dict[str, Any]:
        """Roots for `compare.chaos.fields.read_path`."""
        ready = self.ready
        return {
            **self.objects,
            "replicaset": self.replicaset,
            "pods": {"ready": len(ready), "uids": sorted(uid(p) or "" for p in ready)},
            "endpointslices": {"foreign": self.foreign_slices},
        }


def _by_uid(target: str | None) -> bool:
    """A deletion of this target counts only when an object with a new uid is back: every
    target but the pods (their own rule) and a part of an approach itself (a process, no
    object: `Approach.fault_targets`)."""
    return target is not None and target != "pod" and target not in approaches.fault_targets()


@dataclass(frozen=True)
class Observation:
    """One reading: when it was received, and why the desired state did not hold (empty: held)."""

    at: float
    problems: tuple[str, ...]
    value: Any  # the tracked field (or presence / ready count)
    uids: dict[str, Any]
    ready: int
    cause: str = ""  # the event that produced this reading ("MODIFIED Deployment webapp")
    # What in this reading shows the fault happened: the judge's findings, or the target
    # replaced by a new object. The fault's own rule (old uid still there) shows nothing.
    fault: tuple[str, ...] = ()
    # Who had written the fault's object(s) so far (`compare.results.writers`): a heal's author
    # is whoever wrote between the last reading that did not hold and the first that did.
    writes: tuple[Write, ...] = ()

    @property
    def holds(self) -> bool:
        return not self.problems


class TrialJudge:
    """The healing rule of one trial, fixed by the desired objects and the state before it."""

    def __init__(
        self,
        desired: DesiredObjects,
        target: str | None,
        field: str | None,
        baseline: Reading,
    ) -> None:
        self.desired = desired
        self.target = target
        self.field = field
        view = View.of(desired, baseline)
        self.field_judged = field is None or _judges(desired, field)
        self.uids_before = view.uids()
        self.before = self.value_of(view)
        self.baseline_problems = tuple(problems(desired, baseline))
        # Pods seen changed in place: nothing restores a pod, so only its replacement heals.
        self.changed_pods: dict[str, str] = {}
        self._note_changed_pods(baseline)
        self.templates_before = _templates(desired, baseline)
        # Fixed for the trial, read at every reading: what a heal restores (`_healed`), each
        # desired object's row of the table of kinds (`_allowed_rollouts`).
        self.healed_root = parse_path(field)[0] if field else target
        self.pods_before = set(self.uids_before["pods"])
        self.rows = {item.root: KINDS[item.kind] for item in desired.items if item.kind in KINDS}
        self.writes_before = writes_of(self._healed(view))

    def value_of(self, view: View) -> Any:
        if self.field is not None:
            return read_path(self.field, view.roots())
        if _by_uid(self.target):
            return PRESENT if view.uids().get(str(self.target)) else ABSENT
        if self.target == "pod":
            return len(view.ready)
        return None

    def _note_changed_pods(self, reading: Reading) -> dict[str, list[Any]]:
        drift = pod_drift(self.desired, reading)
        for pod_uid, differs in drift.items():
            self.changed_pods.setdefault(pod_uid, differs[0].path.split(".", 1)[0])
        return drift

    def observe(self, reading: Reading, at: float, cause: str = "") -> Observation:
        judged = problems(self.desired, reading)
        found = list(judged)
        rolling = self._allowed_rollouts(reading, judged)
        fault = [p for p in judged if not only_pending(p) and not _rolling(p, rolling)]
        drift = self._note_changed_pods(reading)
        for pod in reading.all("Pod"):
            pod_uid = str(uid(pod))
            if pod_uid in self.changed_pods and pod_uid not in drift and not terminating(pod):
                found.append(
                    f"{self.changed_pods[pod_uid]}: changed in place before (uid {pod_uid});"
                    " only its replacement heals"
                )
        fault.extend(_gap_faults(self.desired, reading))
        view = View.of(self.desired, reading)
        uids = view.uids()
        if self.field is None and _by_uid(self.target):
            now, was = uids.get(str(self.target)), self.uids_before.get(str(self.target))
            if now is not None and now == was:
                found.append(
                    f"{self.target}: uid {now} is the object from before the fault;"
                    " a deleted object counts only when one with a new uid is back"
                )
            elif now is not None and was is not None:
                fault.append(f"{self.target}: replaced by a new object (uid {now})")
        if self.target == "pod":
            ready = set(view.roots()["pods"]["uids"])
            if ready and ready <= set(self.uids_before["pods"]):
                found.append("pods: every Ready pod is from before the fault; no replacement")
            elif ready - set(self.uids_before["pods"]):
                fault.append("pods: replaced by new pods")
        return Observation(
            at=at,
            problems=tuple(found),
            value=self.value_of(view),
            uids=uids,
            ready=len(view.ready),
            cause=cause,
            fault=tuple(fault),
            writes=writes_of(self._healed(view)),
        )

    def _healed(self, view: View) -> list[dict[str, Any] | None]:
        """The live objects a heal of this fault restores: the fault's object (its field's
        root, else its target), or, for pods, the pods that were not there before."""
        root = self.healed_root
        if root in ("pod", "pods"):
            before = self.pods_before
            return [p for p in view.pods if uid(p) not in before and not terminating(p)]
        if root == "replicaset":
            return [view.replicaset]
        return [view.objects.get(root)] if root else []

    def _allowed_rollouts(self, reading: Reading, judged: Sequence[str]) -> dict[str, Kind]:
        """The workloads (by root, with their row of the table of kinds) whose pod template
        changed since the baseline, but only in what the judge allows (an unowned annotation,
        `kubectl rollout restart`): the rollout that follows keeps the state from holding until
        it is done, yet it is no fault - whatever the kind (`Kind.rolling`: a StatefulSet's
        ordinal is missing for a moment as its pod is made again)."""
        found = {}
        for root, template in _templates(self.desired, reading).items():
            before = self.templates_before.get(root)
            if template is None or before is None or template == before:
                continue
            row = self.rows[root]
            if not any(
                p.startswith((f"{root}.", f"{root}:"))
                and not only_pending(p)
                and not row.rolling(p, root)
                for p in judged
            ):
                found[root] = row
        return found


def _templates(desired: DesiredObjects, reading: Reading) -> dict[str, Any]:
    """Each desired workload's live pod template, by root."""
    found: dict[str, Any] = {}
    for item in desired.items:
        if item.kind in WORKLOAD_KINDS and item.namespace is None:
            live = reading.get(item.kind, item.name)
            found[item.root] = None if live is None else pod_template(live, item.kind)
    return found


def _rolling(problem: str, rolling: Mapping[str, Kind]) -> bool:
    """A problem of an allowed rollout in progress (`Kind.rolling`)."""
    return any(row.rolling(problem, root) for root, row in rolling.items())


def _gap_faults(desired: DesiredObjects, reading: Reading) -> list[str]:
    """Desired objects that changed while the watch was relisting (410 Gone): a fault and its
    revert can both fall in the gap, and the relist alone would show nothing."""
    found = []
    for item in desired.items:
        change = reading.gap.get(f"{item.key}/{item.name}")
        if change:
            found.append(f"{item.root}: changed while the watch was relisting ({change})")
    return found


@dataclass(frozen=True)
class Relapse:
    healed_at: float
    drifted_at: float
    detail: str


@dataclass(frozen=True)
class Sighting:
    how: Literal["event", "reading", "injection-output"]
    at: float  # time.time()
    detail: str


@dataclass(frozen=True)
class Measurement:
    status: Literal["healed", "not-healed", "no-fault"]
    time_to_heal: float | None
    time_to_first_heal: float | None
    seen: Sighting | None
    flaps: tuple[Relapse, ...]
    during: Any
    final: Observation
    readings: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    # The field managers that wrote the settled heal (`compare.results.writers`).
    healed_by: tuple[str, ...] = ()


def healing_since(after: Sequence[Observation]) -> float | None:
    """Since when the desired state has held without a break, counted only once the fault was
    seen (None: not seen yet, or not holding now). The observer's live stop rule."""
    seen = next((i for i, o in enumerate(after) if o.fault), None)
    if seen is None:
        return None
    since = None
    for obs in after[seen:]:
        since = (since or obs.at) if obs.holds else None
    return since


def fault_seen(
    after: Sequence[Observation], reported: Mapping[str, Any] | None, judge: TrialJudge
) -> Sighting | None:
    """The first reading that did not hold, else the injection's own report of a change."""
    for obs in after:
        if obs.fault:
            how: Literal["event", "reading"] = "event" if obs.cause else "reading"
            return Sighting(how, obs.at, obs.fault[0])
    if reported is not None and _judged_change(judge, reported):
        return Sighting(
            "injection-output",
            float(reported.get("at") or 0.0),
            f"{judge.field}: the injection stored {reported.get('value')!r}",
        )
    return None


def _judged_change(judge: TrialJudge, reported: Mapping[str, Any]) -> bool:
    # Only a change the judge would see: a value that differs in a field it judges. An added
    # annotation (allowed) is reported by the action yet is no fault.
    if judge.field is None or reported.get("value") == judge.before:
        return False
    return judge.field_judged


def _judges(desired: DesiredObjects, field: str) -> bool:
    """Whether the judge compares `field` (roots other than a desired object - pods, the
    ReplicaSet - are readiness, always judged)."""
    root, *keys = parse_path(field)
    # As `View` names them: a root, or a kind's bare name for the first of that kind (an app
    # with two Deployments has roots `deployment/<name>`; its faults act on the first).
    item = next((i for i in desired.items if i.root == root), None) or next(
        (i for i in desired.items if i.kind.lower() == root), None
    )
    return item is None or judged_field(item.defaulted, keys, raw=item.raw)


def settle_start(heal_start: float, injected_at: float) -> float:
    """When a heal's settle period starts: when the heal began, but never before the injection
    ended. An injection still under way can undo a heal it has not finished causing (it deletes
    the object the controller re-created, then creates its own copy), so only what holds after
    the injection's end can settle; the time to heal still counts from the heal's start."""
    return max(heal_start, injected_at)


def measure(
    judge: TrialJudge,
    observations: Sequence[Observation],
    *,
    injection_started: float,
    injected_at: float,
    window: float,
    settle: float,
    observed_until: float,
    reported: Mapping[str, Any] | None = None,
) -> Measurement:
    """The verdict over the readings of one trial (see the module docstring)."""
    # In time order: a full re-read is stamped at its end but recorded after events that came
    # in meanwhile, and a heal must never seem to start after the drift that ends it.
    after = sorted((o for o in observations if o.at >= injection_started), key=lambda o: o.at)
    if not after:
        raise ValueError("no reading after the injection started")
    seen = fault_seen(after, reported, judge)
    if seen is None:
        return Measurement(
            status="no-fault",
            time_to_heal=None,
            time_to_first_heal=None,
            seen=None,
            flaps=(),
            during=judge.before,
            final=after[-1],
            readings=len(after),
        )
    since = [o for o in after if o.at >= seen.at]
    first_heal: float | None = None
    flaps: list[Relapse] = []
    heal_start: float | None = None
    settled: float | None = None
    for obs in since:
        if obs.holds:
            if heal_start is None:
                heal_start = obs.at
                first_heal = first_heal if first_heal is not None else obs.at
            continue
        if heal_start is not None:
            if obs.at - settle_start(heal_start, injected_at) >= settle:
                settled = heal_start
                break
            flaps.append(Relapse(heal_start, obs.at, obs.problems[0]))
            heal_start = None
    if (
        settled is None
        and heal_start is not None
        and observed_until - settle_start(heal_start, injected_at) >= settle
    ):
        settled = heal_start
    if settled is not None and settled - injected_at > window:
        settled = None  # healed, but too late
    end = since[-1]
    if settled is not None:
        end = next(o for o in since if o.at >= settled)
    span = [o for o in since if o.at <= end.at]
    healed_by: tuple[str, ...] = ()
    if settled is not None:
        earlier = [o for o in after if o.at < end.at and o is not end]
        healed_by = restoring_writers(
            earlier[-1].writes if earlier else judge.writes_before, end.writes
        )
    return Measurement(
        status="healed" if settled is not None else "not-healed",
        time_to_heal=None if settled is None else max(settled - injected_at, 0.0),
        time_to_first_heal=None if first_heal is None else max(first_heal - injected_at, 0.0),
        seen=seen,
        flaps=tuple(flaps),
        during=_during(judge, span, reported),
        final=end if settled is not None else after[-1],
        readings=len(after),
        healed_by=healed_by,
    )


def _during(
    judge: TrialJudge, span: Sequence[Observation], reported: Mapping[str, Any] | None
) -> Any:
    if reported is not None and "value" in reported:
        return reported["value"]
    if not span:
        return None
    if judge.field is None and _by_uid(judge.target):
        key = str(judge.target)
        if any(o.value == ABSENT for o in span):
            return ABSENT
        changed = any(o.uids.get(key) != judge.uids_before.get(key) for o in span)
        return RECREATED if changed else PRESENT
    if judge.field in (None, "pods.ready") and judge.target == "pod":
        return min(o.ready for o in span)
    for obs in span:
        if obs.value != judge.before:
            return obs.value
    return span[0].value


def recreated(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Kinds whose uid changed (a new object), plus `pod` when new pods appeared."""
    kinds = [
        k for k in after if k != "pods" and after.get(k) and before.get(k) and after[k] != before[k]
    ]
    if set(after.get("pods") or []) - set(before.get("pods") or []):
        kinds.append("pod")
    return kinds


def build_evidence(
    judge: TrialJudge,
    measurement: Measurement,
    *,
    injected_at: float,
    settle: float,
    detected_by: str | None = None,
    chaos_verdict: str | None = None,
    chaos_agrees: bool | None = None,
    cross_check: CrossCheck | None = None,
    extra: dict[str, Any] | None = None,
) -> Evidence:
    final = measurement.final
    seen = measurement.seen
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
        healed_by=list(measurement.healed_by),
        fault_seen=(
            None
            if seen is None
            else FaultSeen(how=seen.how, at_seconds=_rel(seen.at, injected_at), detail=seen.detail)
        ),
        flaps=[
            Flap(
                healed_at_seconds=_rel(f.healed_at, injected_at),
                drifted_at_seconds=_rel(f.drifted_at, injected_at),
                detail=f.detail,
            )
            for f in measurement.flaps
        ],
        settle_seconds=settle,
        chaos_verdict=chaos_verdict,
        chaos_agrees=chaos_agrees,
        cross_check=cross_check,
        **(extra or {}),
    )


def _rel(at: float, injected_at: float) -> float:
    return round(max(at - injected_at, 0.0), 4)
