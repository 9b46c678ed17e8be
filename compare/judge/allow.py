"""The allow-list: what others may legitimately set on a deployed object without it being drift.

Everything else is judged closed-world (see `compare.judge.diff`): a changed value, a removed
field and an added field all count. Each entry says why it is allowed. A path is a tuple of
keys relative to the object; a list item is `[]` in a pattern and `*` matches any key.
"""

from __future__ import annotations

import copy
import functools
import ipaddress
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

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
        " last-applied-configuration); those the deployer sets are judged",
    ),
    Allowed(
        ("spec", "template", "metadata", "annotations"),
        OPEN_MAP,
        "pod-template annotations nobody owns may be added (`kubectl rollout restart` sets"
        " kubectl.kubernetes.io/restartedAt); the state holds again once that rollout is done,"
        " and the rollout it causes is no fault",
    ),
    Allowed(
        ("spec", "clusterIP"),
        ALLOCATED,
        "allocated by the API server: only as an allocation, an IP address (`None`, a"
        " headless Service, routes differently and is drift)",
    ),
    Allowed(
        ("spec", "clusterIPs"),
        ALLOCATED,
        "allocated by the API server with clusterIP: IP addresses, the first one clusterIP",
    ),
    Allowed(
        ("spec", "ports", "[]", "nodePort"),
        ALLOCATED,
        "allocated by the API server: only for a port of a Service the desired object makes a"
        " NodePort or LoadBalancer",
    ),
    Allowed(
        ("spec", "healthCheckNodePort"),
        ALLOCATED,
        "allocated by the API server: only for a desired LoadBalancer with"
        " externalTrafficPolicy Local",
    ),
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


def allocation_problem(
    path: Sequence[str], value: Any, desired: Mapping[str, Any], live: Mapping[str, Any]
) -> str | None:
    """Why `value`, at an ALLOCATED path the desired object leaves unset, is not an allocation
    the API server would make for the desired object (None: it is one). An allocated field is
    allowed for its reason only: a value that changes what the object does is drift."""
    spec = desired.get("spec") or {}
    field = path[-1]
    if field == "clusterIP":
        return None if _is_ip(value) else "want an IP address the API server allocates"
    if field == "clusterIPs":
        first = (live.get("spec") or {}).get("clusterIP")
        items = list(value) if isinstance(value, list | tuple) else [value]
        if all(_is_ip(v) for v in items) and items and items[0] == first:
            return None
        return "want the IP addresses the API server allocates, clusterIP first"
    if field == "nodePort":
        if spec.get("type") not in ("NodePort", "LoadBalancer"):
            return f"want none: the desired Service is {spec.get('type') or 'ClusterIP'}"
        return None if _is_port(value) else "want a port the API server allocates"
    if field == "healthCheckNodePort":
        local = spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"
        if not local:
            return "want none: only a LoadBalancer with externalTrafficPolicy Local has one"
        return None if _is_port(value) else "want a port the API server allocates"
    return None


def _is_ip(value: Any) -> bool:
    try:
        ipaddress.ip_address(str(value))
    except ValueError:
        return False
    return True


def _is_port(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 65536


# What the API server writes into an object's metadata: a copy someone else makes has its own.
SERVER_METADATA = (
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
)
# What a patch sets to redo a Service's address allocation (ipFamilies follow it).
_ALLOCATION = ("clusterIP", "clusterIPs", "type")
# ipFamilyPolicy's default: the API server's, not the object's request.
_DEFAULT_FAMILY_POLICY = "SingleStack"


def without_allocated(obj: Mapping[str, Any], keep: Mapping[str, Any] | None = None) -> Any:
    """A copy of `obj` (API JSON) as someone creating it anew sends it, the one mechanism of
    every fault that copies an object: without what the API server writes (`status` - a
    LoadBalancer's ingress address among it - and SERVER_METADATA), without the ALLOCATED
    fields of the list above but those `keep` (a merge patch about to be applied) sets. The
    API server allocates them anew; sent as the original's, a copy is refused (a node port
    still taken, `clusterIPs` of another family than the patch's clusterIP).

    `ipFamilies`/`ipFamilyPolicy` are the object's own (defaulted from the cluster when unset,
    judged like any field) and stay, unless `keep` redoes the allocation they describe (sets
    clusterIP, clusterIPs or type) without setting them: then the families, which the API
    server derives from the allocation, are left out, and the policy too when it is the
    default (SingleStack) - a request for two families (PreferDualStack, RequireDualStack)
    stays."""
    copied = copy.deepcopy(dict(obj))
    copied.pop("status", None)
    metadata = copied.get("metadata")
    if isinstance(metadata, dict):
        for key in SERVER_METADATA:
            metadata.pop(key, None)
    for entry in ALLOW_LIST:
        if entry.rule == ALLOCATED:
            _drop(copied, entry.pattern, keep or {})
    spec, wanted = copied.get("spec"), (keep or {}).get("spec")
    redone = isinstance(wanted, Mapping) and any(wanted.get(k) is not None for k in _ALLOCATION)
    if isinstance(spec, dict) and isinstance(wanted, Mapping) and redone:
        if wanted.get("ipFamilies") is None:
            spec.pop("ipFamilies", None)
        policy = spec.get("ipFamilyPolicy")
        if wanted.get("ipFamilyPolicy") is None and policy == _DEFAULT_FAMILY_POLICY:
            spec.pop("ipFamilyPolicy", None)
    return copied


def _drop(node: Any, pattern: Path, keep: Any) -> None:
    """Remove `pattern` below `node` unless `keep` (the same place in the patch) sets it; a
    list item (`[]`) is each item (a patch's list replaces the whole list: it keeps them)."""
    if not isinstance(node, dict) or not pattern:
        return
    key, rest = pattern[0], pattern[1:]
    wanted = keep.get(key) if isinstance(keep, Mapping) else None
    if not rest:
        if wanted is None:
            node.pop(key, None)
        return
    child = node.get(key)
    if rest[0] == "[]":
        if isinstance(child, list) and wanted is None:
            for item in child:
                _drop(item, rest[1:], None)
        return
    _drop(child, rest, wanted)
