"""When a Deployment's rollout of the desired pod template is complete, judged from the pods.

The Deployment's own status is derived by two controllers in turn and lags the pods both ways
(right after a pod is deleted it still counts it as Ready; after its replacement is Ready it
may still say 2), so judging by it makes the verdict flap. The rollout is complete when the
Deployment controller has seen the current spec (observedGeneration), exactly `replicas` pods
of its current ReplicaSet are Ready and not terminating, and no pod of another ReplicaSet of
the Deployment still runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compare.judge.kinds import workload_kind

REVISION = "deployment.kubernetes.io/revision"
TEMPLATE_HASH = "pod-template-hash"  # the label the controller adds to its ReplicaSets
Obj = dict[str, Any]


# The watch has one stream per kind, so a reading can hold a workload's children (a new
# ReplicaSet, its pods) before the change of the workload that made them: a rollout of a
# template the reading does not show yet. Judged then, its pods look stale or foreign.
PENDING_STATE = "its children show a newer state than this reading has of it yet"


def uid(obj: Obj | None) -> str | None:
    return None if obj is None else (obj.get("metadata") or {}).get("uid")


def controller_uid(obj: Obj) -> str | None:
    return (_controller(obj) or {}).get("uid")


def _controller(obj: Obj) -> Obj | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((ref for ref in refs if ref.get("controller")), None)


def _deployment_behind(deployment: Obj, replicasets: list[Obj], pods: list[Obj]) -> bool:
    """Whether the reading holds the Deployment older than its children: a ReplicaSet it owns
    numbered above the revision the Deployment itself shows, or a pod controlled by a
    ReplicaSet the reading has not got yet. The controller numbers a new (or reused)
    ReplicaSet above every other and then records that number on the Deployment, so in a
    consistent reading nothing it owns is numbered above it."""
    owner, known = uid(deployment), _revision(deployment)
    present = set()
    for rs in replicasets:
        present.add(uid(rs))
        if controller_uid(rs) == owner and not terminating(rs) and _revision(rs) > known:
            return True
    for pod in pods:
        ref = _controller(pod)
        if ref is not None and ref.get("kind") == "ReplicaSet" and ref.get("uid") not in present:
            return True
    return False


def terminating(obj: Obj) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def ready(pod: Obj) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)


def current_replicaset(deployment: Obj | None, replicasets: Iterable[Obj]) -> Obj | None:
    """The ReplicaSet of the Deployment's current pod template (the highest revision if
    several): the Deployment controller's own rule, template equal but for the hash label.

    Not simply the highest revision seen: the ReplicaSet of a new template may not have
    reached this reading yet (another watch stream), and the old one must not pass for it."""
    owner = uid(deployment)
    if owner is None or deployment is None:
        return None
    template = (deployment.get("spec") or {}).get("template") or {}
    owned = [
        rs
        for rs in replicasets
        if controller_uid(rs) == owner and not terminating(rs) and _template_of(rs) == template
    ]
    if not owned:
        return None
    return max(owned, key=_revision)


def _template_of(replicaset: Obj) -> Obj:
    # Shallow copies down to the labels: this runs on every event of a trial.
    template = (replicaset.get("spec") or {}).get("template") or {}
    meta = template.get("metadata") or {}
    labels = {k: v for k, v in (meta.get("labels") or {}).items() if k != TEMPLATE_HASH}
    return {**template, "metadata": {**meta, "labels": labels}}


def _revision(obj: Obj) -> int:
    """The revision annotation of a ReplicaSet, or of the Deployment (its newest one's)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    return int(annotations.get(REVISION, "0") or 0)


def ready_pods(replicaset: Obj | None, pods: Iterable[Obj]) -> list[Obj]:
    """Ready, not terminating pods controlled by the current ReplicaSet."""
    owner = uid(replicaset)
    return [
        pod
        for pod in pods
        if owner is not None
        and controller_uid(pod) == owner
        and not terminating(pod)
        and ready(pod)
    ]


def stale_pods(replicaset: Obj | None, pods: Iterable[Obj]) -> list[Obj]:
    """Running (not terminating) pods of any other ReplicaSet: a rollout not finished."""
    current = uid(replicaset)
    return [pod for pod in pods if not terminating(pod) and controller_uid(pod) != current]


def foreign_pods(owners: Iterable[str | None], pods: Iterable[Obj]) -> list[Obj]:
    """Running pods the workload's selector matches that none of `owners` (the workload, or
    its ReplicaSets) controls: someone else's pods its Service would route to."""
    mine = {o for o in owners if o}
    return [pod for pod in pods if not terminating(pod) and controller_uid(pod) not in mine]


def selected(pods: Iterable[Obj], selector: Mapping[str, str]) -> list[Obj]:
    """The pods whose labels match a Deployment's matchLabels."""
    found = []
    for pod in pods:
        labels = (pod.get("metadata") or {}).get("labels") or {}
        if selector and all(labels.get(k) == v for k, v in selector.items()):
            found.append(pod)
    return found


def rollout_problems(
    deployment: Obj, replicasets: Iterable[Obj], pods: Iterable[Obj], *, root: str = "deployment"
) -> list[str]:
    """Why the rollout of the Deployment's current template is not complete (empty: it is).

    `pods` are the pods its selector matches."""
    replicasets, pods = list(replicasets), list(pods)
    meta = deployment.get("metadata") or {}
    status = deployment.get("status") or {}
    generation, observed = meta.get("generation") or 0, status.get("observedGeneration") or 0
    if observed < generation:
        # Until the controller has seen the spec, "its current ReplicaSet" is not yet known.
        return [f"{root}.status.observedGeneration: want {generation}, got {observed}"]
    if _deployment_behind(deployment, replicasets, pods):
        return [f"{root}: {PENDING_STATE}"]
    found = []
    want = (deployment.get("spec") or {}).get("replicas", 1)
    current = current_replicaset(deployment, replicasets)
    got = len(ready_pods(current, pods))
    if got != want:
        found.append(f"pods.ready: want {want}, got {got}")
    owned = {uid(rs) for rs in replicasets if controller_uid(rs) == uid(deployment)}
    foreign = foreign_pods(owned, pods)
    stale = len(stale_pods(current, pods)) - len(foreign)
    if stale:
        found.append(f"pods.stale: {stale} pod(s) of another ReplicaSet still running")
    found.extend(foreign_problems(foreign, root))
    return found


def foreign_problems(foreign: Iterable[Obj], root: str) -> list[str]:
    return [
        f"pod[{(p.get('metadata') or {}).get('name')}]: matches the selector of {root} but is"
        f" not its own (controller: {controller_uid(p) or 'none'})"
        for p in foreign
    ]


# StatefulSets and DaemonSets: their controllers label each pod with the ControllerRevision of
# its template. A StatefulSet's status names the revision of its current template; a
# DaemonSet's does not, so it is derived from the ControllerRevisions the DaemonSet owns.
REVISION_HASH = "controller-revision-hash"
PENDING_REVISION = "no ControllerRevision of its current template yet"


def current_revision(workload: Obj, revisions: Iterable[Obj] = ()) -> str | None:
    """The `controller-revision-hash` of the workload's current template: a StatefulSet's
    `status.updateRevision`; for a DaemonSet the hash of the highest ControllerRevision it
    owns whose data is its current template (the DaemonSet controller's own record)."""
    status = workload.get("status") or {}
    if workload.get("kind") != "DaemonSet" and status.get("updateRevision"):
        return str(status["updateRevision"])
    owner = uid(workload)
    template = (workload.get("spec") or {}).get("template") or {}
    best: tuple[int, str] | None = None
    for rev in revisions:
        if controller_uid(rev) != owner or terminating(rev):
            continue
        data = ((rev.get("data") or {}).get("spec") or {}).get("template") or {}
        if {k: v for k, v in data.items() if k != "$patch"} != template:
            continue
        hashed = _revision_hash(rev)
        number = int(rev.get("revision") or 0)
        if best is None or number > best[0]:
            best = (number, hashed)
    return None if best is None else best[1]


def current_pods(
    workload: Obj | None, pods: Iterable[Obj], revisions: Iterable[Obj] = ()
) -> list[Obj]:
    """Ready, not terminating pods a StatefulSet or DaemonSet controls, of its current
    revision (none while that revision is not known)."""
    owner = uid(workload)
    if owner is None or workload is None:
        return []
    revision = current_revision(workload, revisions)
    return [
        pod
        for pod in pods
        if controller_uid(pod) == owner
        and not terminating(pod)
        and ready(pod)
        and revision is not None
        and _labels(pod).get(REVISION_HASH) == revision
    ]


def _pod_set_behind(workload: Obj, revisions: list[Obj], pods: list[Obj], current: str) -> bool:
    """`behind` for a StatefulSet or DaemonSet: a ControllerRevision it owns numbered above
    its current one, or a pod of it labelled with a revision the reading has not got yet
    (judged only once the reading has any revision of it: not every reading watches them)."""
    owner = uid(workload)
    numbers: dict[str, int] = {}
    for rev in revisions:
        if controller_uid(rev) == owner and not terminating(rev):
            # A pod names its revision by the revision's name (StatefulSet) or hash (DaemonSet).
            for name in (_revision_hash(rev), str((rev.get("metadata") or {}).get("name", ""))):
                numbers[name] = int(rev.get("revision") or 0)
    if not numbers:
        return False
    known = numbers.get(current)
    if known is not None and any(n > known for n in numbers.values()):
        return True
    return any(
        controller_uid(p) == owner
        and not terminating(p)
        and _labels(p).get(REVISION_HASH) not in numbers
        for p in pods
    )


def _revision_hash(revision: Obj) -> str:
    return (
        _labels(revision).get(REVISION_HASH)
        or str((revision.get("metadata") or {}).get("name", "")).rsplit("-", 1)[-1]
    )


def _labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def wanted_pods(workload: Obj) -> int:
    """How many pods the workload wants: a StatefulSet its replicas, a DaemonSet one per
    node it is scheduled to (its controller's count)."""
    row = workload_kind(workload.get("kind"))
    if row is not None and row.per_node:
        return int((workload.get("status") or {}).get("desiredNumberScheduled") or 0)
    return int((workload.get("spec") or {}).get("replicas", 1))


def pod_set_problems(
    workload: Obj, pods: Iterable[Obj], *, root: str, revisions: Iterable[Obj] = ()
) -> list[str]:
    """Why a StatefulSet's or DaemonSet's pods are not those of its current revision, Ready
    (empty: they are). `pods` are the pods its selector matches. A pod of an older revision
    is drift whatever the update strategy (under `OnDelete` nothing replaces it)."""
    meta = workload.get("metadata") or {}
    status = workload.get("status") or {}
    generation, observed = meta.get("generation") or 0, status.get("observedGeneration") or 0
    if observed < generation:
        return [f"{root}.status.observedGeneration: want {generation}, got {observed}"]
    revisions, pods = list(revisions), list(pods)
    revision = current_revision(workload, revisions)
    if revision is None:
        return [f"{root}: {PENDING_REVISION}"]
    if _pod_set_behind(workload, revisions, pods, revision):
        return [f"{root}: {PENDING_STATE}"]
    found = []
    want, got = wanted_pods(workload), len(current_pods(workload, pods, revisions))
    if got != want:
        found.append(f"pods.ready: want {want}, got {got}")
    owner = uid(workload)
    stale = [
        p
        for p in pods
        if controller_uid(p) == owner
        and not terminating(p)
        and _labels(p).get(REVISION_HASH) != revision
    ]
    if stale:
        found.append(f"pods.stale: {len(stale)} pod(s) of another revision still running")
    found.extend(foreign_problems(foreign_pods([owner], pods), root))
    return found


def reported_problem(obj: Mapping[str, Any]) -> str | None:
    """Why an object's own status does not report it ready yet (None: it does): a status of
    an older generation than its spec, or a workload with fewer pods ready (and, counting
    replicas, updated) than it wants, one per node it is scheduled to or `spec.replicas`.

    The controllers' own counts, not the rules above: what an operator arm waits for before it
    has a baseline to judge its children by (`ready: {children: true}`); the baseline is then
    held to the rules above before it is kept."""
    kind_name = obj.get("kind")
    spec, status = obj.get("spec") or {}, obj.get("status") or {}
    meta = obj.get("metadata") or {}
    what = f"{kind_name} {meta.get('name')}"
    if (status.get("observedGeneration") or 0) < (meta.get("generation") or 0):
        return f"{what}: not observed yet"
    row = workload_kind(kind_name)
    if row is None:
        return None
    if row.per_node:
        want, got = status.get("desiredNumberScheduled") or 0, status.get("numberReady") or 0
    else:
        want = spec.get("replicas", 1)
        got = min(status.get("readyReplicas") or 0, status.get("updatedReplicas") or 0)
    return None if got >= want else f"{what}: {got}/{want} ready"
