"""Whether the desired state holds in a reading, and if not, everything that keeps it from it.

The desired state holds when every desired object is there and equal to its desired form
closed-world (`compare.judge.diff`, with the allow-list), and the rollout of each Deployment's
desired pod template is complete, and a StatefulSet's or DaemonSet's pods are those of its
current template, Ready (`compare.judge.rollout`), and every running pod of a workload is
its template as made (`compare.judge.pods`), and no pod the workload's selector matches is
someone else's, and no EndpointSlice for a desired Service is (`compare.judge.endpoints`),
and each kind's own rule holds: an HPA's replicas, a DaemonSet's node count, a
StatefulSet's ordinals, a Job's completion (`compare.judge.workloads`). An object being
deleted (a deletionTimestamp, held by finalizers) is drift: it will not stay, whatever its
spec says. Which rules judge a kind is its row of the table of kinds (`compare.judge.kinds`);
`RULES` holds each rule's call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from compare.judge.desired import DesiredObjects, match_labels
from compare.judge.diff import Mismatch, diff_object
from compare.judge.endpoints import slice_problems
from compare.judge.kinds import (
    COMPLETION,
    KINDS,
    NODES,
    ORDINALS,
    REPLICASETS,
    REVISIONS,
    RULED_KINDS,
    kind,
    pod_template,
    workload_kind,
)
from compare.judge.pods import pod_mismatches
from compare.judge.reading import Obj, Reading
from compare.judge.rollout import (
    PENDING_REVISION,
    PENDING_STATE,
    REVISION_HASH,
    controller_uid,
    current_pods,
    current_replicaset,
    pod_set_problems,
    ready_pods,
    rollout_problems,
    selected,
    terminating,
    uid,
)
from compare.judge.workloads import (
    as_own,
    daemonset_problems,
    finished,
    job_problems,
    scaled_replicas_allowed,
    statefulset_problems,
)

CONTROLLER_REVISIONS = "ControllerRevision"

# A rule of the table of kinds (`compare.judge.kinds`) -> its problems for a live object:
# (live, the running pods its selector matches, the reading, its root).
Rule = Callable[[Obj, list[Obj], Reading, str], list[str]]
RULES: dict[str, Rule] = {
    REPLICASETS: lambda live, pods, reading, root: rollout_problems(
        live, reading.all("ReplicaSet"), pods, root=root
    ),
    REVISIONS: lambda live, pods, reading, root: pod_set_problems(
        live, pods, root=root, revisions=reading.all(CONTROLLER_REVISIONS)
    ),
    ORDINALS: lambda live, pods, reading, root: statefulset_problems(live, pods, root=root),
    NODES: lambda live, pods, reading, root: daemonset_problems(
        live, reading.all("Node"), root=root
    ),
    COMPLETION: lambda live, pods, reading, root: job_problems(live, root=root),
}


def mismatches(desired: DesiredObjects, reading: Reading) -> list[Mismatch]:
    """Field by field: what differs from the desired objects (no readiness).

    Replicas an HPA of the same set scales are the HPA's within its range, and an object's
    own UID in its spec is the live object's (`compare.judge.workloads`)."""
    found: list[Mismatch] = []
    scaled = desired.scaled
    for item in desired.items:
        live = reading.get(item.key, item.name)
        if live is not None and terminating(live):
            meta = live.get("metadata") or {}
            found.append(
                Mismatch(
                    item.root, "deleting", meta.get("deletionTimestamp"), meta.get("finalizers")
                )
            )
        want = as_own(item.defaulted, live) if item.own_uid else item.defaulted
        found_here = diff_object(item.root, want, live, raw=item.raw)
        hpa = scaled.get((item.kind, item.name))
        if hpa is not None and live is not None:
            # The HPA's to set: any value in its range, whatever the chart (or the default).
            replicas = f"{item.root}.spec.replicas"
            found_here = [m for m in found_here if m.path != replicas]
            if not scaled_replicas_allowed(item.kind, item.name, live, scaled):
                got = (live.get("spec") or {}).get("replicas")
                found_here.append(Mismatch(replicas, "changed", f"{hpa[0]}..{hpa[1]}", got))
        found.extend(found_here)
    return found


def pod_drift(desired: DesiredObjects, reading: Reading) -> dict[str, list[Mismatch]]:
    """Pod uid -> how that running pod differs from the template it was made from, for every
    pod of a desired workload that differs: a Deployment's pods (of any of its ReplicaSets)
    with their ReplicaSet's template, a StatefulSet's or DaemonSet's pods of its current
    revision with its template (older ones are stale: `pod_set_problems`)."""
    found: dict[str, list[Mismatch]] = {}
    for item in desired.items:
        row = workload_kind(item.kind)
        if row is None or item.namespace:
            continue  # a workload elsewhere: its pods are not read (judged as an object)
        live = reading.get(item.kind, item.name)
        if live is None:
            continue
        pods = [p for p in selected(_running(reading), match_labels(item.defaulted))]
        if row.rollout == REPLICASETS:
            owners = {
                uid(rs): rs for rs in reading.all("ReplicaSet") if controller_uid(rs) == uid(live)
            }
        else:
            owners = {uid(live): live}
            # Each pod with the template of its own revision (the ControllerRevision its hash
            # names): the workload's status may name a revision its live template has already
            # left (a change and its revert), and a pod is what it was made from.
            made_from = _revision_templates(live, reading.all(CONTROLLER_REVISIONS))
        for pod in pods:
            owner = owners.get(controller_uid(pod))
            if owner is None or terminating(pod):
                continue
            if row.rollout == REPLICASETS:
                template: Mapping[str, Any] = pod_template(owner, "ReplicaSet") or {}
            else:
                found_template = made_from.get(_label(pod, REVISION_HASH) or "")
                if found_template is None:
                    continue  # its revision not read yet: nothing to compare it with
                template = found_template
            differs = pod_mismatches(pod, template, owner)
            if differs:
                found[str(uid(pod))] = differs
    return found


def _revision_templates(workload: Obj, revisions: list[Obj]) -> dict[str, Obj]:
    """A StatefulSet's or DaemonSet's ControllerRevisions: revision hash -> pod template."""
    owner = uid(workload)
    found: dict[str, Obj] = {}
    for rev in revisions:
        if controller_uid(rev) != owner:
            continue
        data = ((rev.get("data") or {}).get("spec") or {}).get("template") or {}
        template = {k: v for k, v in data.items() if k != "$patch"}
        # A StatefulSet's pods carry the revision's name, a DaemonSet's its hash (the name's
        # last part, or the revision's own hash label).
        name = str((rev.get("metadata") or {}).get("name", ""))
        for key in (name, name.rsplit("-", 1)[-1], _label(rev, REVISION_HASH)):
            if key:
                found[key] = template
    return found


def _running(reading: Reading) -> list[Obj]:
    """The pods that run: one that ran to its end (a Job's, a hook's) is no workload's pod."""
    return [pod for pod in reading.all("Pod") if not finished(pod)]


def _label(obj: Obj, key: str) -> str | None:
    return ((obj.get("metadata") or {}).get("labels") or {}).get(key)


def problems(desired: DesiredObjects, reading: Reading) -> list[str]:
    """Everything that keeps the desired state from holding (empty: it holds)."""
    found = [str(m) for m in mismatches(desired, reading)]
    # A pod that ran to its end (a Job's, a hook's) runs nothing: it is no workload's pod.
    running = _running(reading)
    # Each kind's rules, kind by kind in the table's order (a Deployment's rollout first).
    for name in RULED_KINDS:
        for item in desired.of_kind(name):
            live = reading.get(name, item.name)
            if live is None:
                continue
            pods = selected(running, match_labels(item.defaulted))
            for rule in KINDS[name].rules:
                found.extend(RULES[rule](live, pods, reading, item.root))
    for differs in pod_drift(desired, reading).values():
        found.extend(str(m) for m in differs)
    found.extend(slice_problems(desired, reading))
    return found


def workload(desired: DesiredObjects, reading: Reading) -> tuple[Obj | None, Obj | None, list[Obj]]:
    """The app's live main workload (`DesiredObjects.workload`: `compare.judge.parts`), a
    Deployment's current ReplicaSet and the pods its selector matches."""
    item = desired.workload
    live = reading.get(item.kind, item.name) if item is not None else None
    replicaset = None
    if item is not None and kind(item.kind).rollout == REPLICASETS:
        replicaset = current_replicaset(live, reading.all("ReplicaSet"))
    return live, replicaset, selected(reading.all("Pod"), desired.selector)


def current_ready(
    live: Obj | None, replicaset: Obj | None, pods: list[Obj], revisions: list[Obj] | None = None
) -> list[Obj]:
    """Ready pods of the workload's current template: a Deployment's current ReplicaSet's,
    a StatefulSet's or DaemonSet's current revision's."""
    row = None if live is None else workload_kind(live.get("kind"))
    if live is not None and row is not None and row.rollout == REVISIONS:
        return current_pods(live, pods, revisions or ())
    return ready_pods(replicaset, pods)


def only_pending(problem: str) -> bool:
    """A problem that says "not seen by the controller yet", not that anything is wrong.

    A Deployment's generation also moves on an annotation change (an allowed one); until the
    controller has observed it the rollout rule cannot tell, so the state does not hold yet -
    but that alone shows no fault."""
    return ".status.observedGeneration:" in problem or problem.endswith(
        (PENDING_REVISION, PENDING_STATE)
    )
