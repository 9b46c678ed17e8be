"""The allow-list: what others may legitimately set on a deployed object without it being drift.

Everything else is judged closed-world (see `compare.judge.diff`): a changed value, a removed
field and an added field all count. Each entry says why it is allowed. A path is a tuple of
keys relative to the object; a list item is `[]` in a pattern and `*` matches any key.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

# The entry's field is not judged unless the desired object sets it itself: a chart may ask
# for `clusterIP: None` (headless) or a fixed nodePort, and then it is judged like any field.
ALLOCATED = "allocated"
# The desired object's keys of this map are judged (changed or removed is drift); keys someone
# else added are allowed.
OPEN_MAP = "open-map"

Path = tuple[str, ...]


@dataclass(frozen=True)
class Allowed:
    pattern: Path
    rule: str
    reason: str

    @property
    def path(self) -> str:
        return ".".join(self.pattern).replace(".[]", "[*]")


ALLOW_LIST: tuple[Allowed, ...] = (
    Allowed(
        ("metadata", "annotations"),
        OPEN_MAP,
        "annotations nobody owns may be added: controllers and tools write their own"
        " (deployment.kubernetes.io/revision, Helm's meta.helm.sh/*, kubectl's"
        " last-applied-configuration)",
    ),
    Allowed(
        ("spec", "template", "metadata", "annotations"),
        OPEN_MAP,
        "pod-template annotations nobody owns may be added (`kubectl rollout restart` sets"
        " kubectl.kubernetes.io/restartedAt); the state holds again once that rollout is done",
    ),
    Allowed(("spec", "clusterIP"), ALLOCATED, "allocated by the API server"),
    Allowed(("spec", "clusterIPs"), ALLOCATED, "allocated by the API server with clusterIP"),
    Allowed(("spec", "ports", "[]", "nodePort"), ALLOCATED, "allocated by the API server"),
    Allowed(("spec", "healthCheckNodePort"), ALLOCATED, "allocated by the API server"),
)

# Not part of the desired state at all: the object's identity (apiVersion, kind, name,
# namespace), what the API server and controllers write into metadata (uid, resourceVersion,
# generation, managedFields, ownerReferences, finalizers, timestamps), and status (readiness is
# judged from the pods themselves, see `compare.judge.rollout`).
JUDGED_METADATA = ("labels", "annotations")
NOT_JUDGED_TOP = ("apiVersion", "kind", "status")


def _match(pattern: Path, path: Sequence[str]) -> bool:
    if len(pattern) != len(path):
        return False
    for want, got in zip(pattern, path, strict=True):
        if want == "[]":
            if not got.startswith("["):
                return False
        elif want != "*" and want != got:
            return False
    return True


def rule_at(path: Sequence[str]) -> str | None:
    """The allow rule of exactly this path (list items as `[key]`), if any."""
    return _rule_at(tuple(path))


@functools.lru_cache(maxsize=4096)
def _rule_at(path: Path) -> str | None:
    for entry in ALLOW_LIST:
        if _match(entry.pattern, path):
            return entry.rule
    return None
