"""Who wrote an object: the field managers the API server records in `metadata.managedFields`,
and from two readings of the same objects, who wrote what restored them (a heal's author).

Every write carries a field manager (a client's `fieldManager`, else its user agent's first
word: `kube-controller-manager`, `helm-controller`, `argocd-controller`, an operator's name).
A heal is attributed to the managers whose entry of a healed object appeared or moved
between the last reading that did not hold and the first that held again; an object that is
new (a re-created Deployment, a replacement pod) is attributed to the managers that wrote it.
Writes through a subresource (`status`, a pod's `binding`) report or place, never restore, so
they are not counted; nor are the toolkit's own injections (`INJECTION_MANAGER`).

Pure functions over API JSON, beside the results they explain: a trial's judge records
`writes_of` per reading, its verdict calls `restoring_writers` (`compare.run.evidence`), the
summaries and reports call `by_kubernetes`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

# Kubernetes' own writers (defined once, for the judge too): its controllers re-create a
# deleted pod or ReplicaSet whatever deploys the app, so a heal they wrote is not the approach's.
from compare.kube.managed import KUBERNETES_MANAGERS

__all__ = [
    "INJECTION_MANAGER",
    "KUBERNETES_MANAGERS",
    "Write",
    "announced",
    "by_kubernetes",
    "restoring_writers",
    "writes_of",
    "written_by",
]

# The field manager of the toolkit's own fault injections (its chaos actions' user agent).
INJECTION_MANAGER = "compare-chaos"

# One write: the object's uid, its manager, the entry's time (RFC 3339, second precision).
Write = tuple[str, str, str]


def writes_of(objects: Iterable[Mapping[str, Any] | None]) -> tuple[Write, ...]:
    """The managed-field entries of `objects` that write content (no subresource), sorted."""
    found: set[Write] = set()
    for obj in objects:
        if not obj:
            continue
        meta = obj.get("metadata") or {}
        uid = str(meta.get("uid") or "")
        for entry in meta.get("managedFields") or ():
            if not isinstance(entry, Mapping) or entry.get("subresource"):
                continue
            manager = str(entry.get("manager") or "")
            if manager and manager != INJECTION_MANAGER:
                found.add((uid, manager, str(entry.get("time") or "")))
    return tuple(sorted(found))


def restoring_writers(before: Sequence[Write], after: Sequence[Write]) -> tuple[str, ...]:
    """The managers that wrote between two readings of the healed objects: every manager of
    an object that is new in `after`, and every manager whose entry is new or whose time
    moved (Kubernetes' own only when no one else's moved). When none moved (both writes fell
    in the same second as the ones before), the latest writers of `after`. Empty: nothing
    records who wrote (no managed fields)."""
    old_uids = {uid for uid, _, _ in before}
    seen = set(before)
    moved = {
        manager
        for uid, manager, when in after
        if uid not in old_uids or (uid, manager, when) not in seen
    }
    if moved:
        # Kubernetes' controllers follow every change with bookkeeping writes of their own (a
        # Deployment's revision annotation): when anyone else wrote too, the restoring change
        # is theirs.
        return tuple(sorted(moved - KUBERNETES_MANAGERS or moved))
    latest = max((when for _, _, when in after), default=None)
    return tuple(sorted({manager for _, manager, when in after if when == latest}))


def announced(managers: Sequence[str], announcer: str) -> tuple[str, ...]:
    """A heal Kubernetes' controllers wrote, which the approach set off and announced with an
    Event of its own correction (`announcer`, the Event's reporting component: an operator
    deleted a pod changed in place, its ReplicaSet made the new one): the approach's, first."""
    if not managers or not announcer or not by_kubernetes(managers) or by_kubernetes([announcer]):
        return tuple(managers)
    return (announcer, *managers)


def by_kubernetes(managers: Iterable[str]) -> bool:
    """Whether a heal was written by Kubernetes' own controllers alone (none of the
    approach's)."""
    names = set(managers)
    return bool(names) and names <= KUBERNETES_MANAGERS


def written_by(managers: Sequence[str]) -> str:
    """`by helm-controller`, `by kube-controller-manager (Kubernetes itself)`; empty when no
    one is recorded. Raw text: each report escapes it for where it is printed."""
    if not managers:
        return ""
    text = "by " + ", ".join(managers)
    return f"{text} (Kubernetes itself)" if by_kubernetes(managers) else text
