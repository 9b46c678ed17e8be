"""Each running pod judged against the pod template it was made from.

A pod is the template its controller copied, plus what pod creation legitimately adds. It is
compared closed-world (`compare.judge.diff`) over its `spec` and labels with the template of
its owner: a Deployment's pod with its ReplicaSet's template (which carries the
`pod-template-hash` label), a StatefulSet's or DaemonSet's pod of the current revision with
the workload's template. What the template sets must be on the pod unchanged; what the pod has
beyond it is drift, except what `SYSTEM_ADDED` names, each with its reason, and only where the
template leaves the field unset (a template that sets `nodeName` or a toleration has it
judged). Annotations are an open map, as on every object. Nothing restores a pod changed in
place (its controller only replaces missing pods), so such a pod stays drift until it is gone.

Runs on every event of a trial: results are cached by the pod's and the template's
resourceVersion, so a reading in which no pod changed costs a dict lookup per pod.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

from compare.judge.diff import Mismatch, diff_object, is_empty

Obj = dict[str, Any]

# Labels a workload controller puts on the pods it makes (never in the template).
CONTROLLER_LABELS = (
    "pod-template-hash",  # Deployment (also in its ReplicaSet's template)
    "controller-revision-hash",  # StatefulSet, DaemonSet
    "statefulset.kubernetes.io/pod-name",  # StatefulSet: the pod's stable name
    "apps.kubernetes.io/pod-index",  # StatefulSet: the ordinal
    "pod-template-generation",  # DaemonSet
)
SA_MOUNT = "/var/run/secrets/kubernetes.io/serviceaccount"
SA_VOLUME_PREFIX = "kube-api-access-"
SYSTEM_TAINT_PREFIX = "node.kubernetes.io/"

# What pod creation adds to the copied template, where the template leaves it unset.
SYSTEM_ADDED: tuple[tuple[str, str], ...] = (
    ("metadata.labels: " + ", ".join(CONTROLLER_LABELS), "the workload controller's own labels"),
    ("spec.nodeName", "the scheduler binds the pod to a node"),
    (
        "spec.serviceAccountName, spec.serviceAccount",
        "ServiceAccount admission sets `default`; the API server mirrors the deprecated alias",
    ),
    (
        f"spec.volumes[{SA_VOLUME_PREFIX}*], containers[*].volumeMounts at {SA_MOUNT}",
        "ServiceAccount admission mounts the API token (a projected volume)",
    ),
    (
        f"spec.tolerations with key {SYSTEM_TAINT_PREFIX}*",
        "DefaultTolerationSeconds admission and the DaemonSet controller tolerate the node"
        " conditions the system taints nodes with",
    ),
    (
        "spec.priority, spec.priorityClassName, spec.preemptionPolicy",
        "Priority admission resolves the (default) priority class",
    ),
    ("spec.enableServiceLinks", "an API default of pods, not of templates"),
    (
        "containers[*].resources requests/limits the template leaves unset",
        "pod defaulting copies limits to requests; LimitRange admission adds defaults",
    ),
    ("containers[*].ports[*].hostPort with hostNetwork", "pod defaulting: the containerPort"),
    ("spec.overhead", "RuntimeClass admission"),
    ("spec.hostname, spec.subdomain (StatefulSet)", "the StatefulSet's stable network identity"),
    (
        "spec.volumes of the StatefulSet's volumeClaimTemplates",
        "the StatefulSet controller mounts each pod's claims",
    ),
    (
        "spec.affinity.nodeAffinity.required... pinning metadata.name (DaemonSet)",
        "the DaemonSet controller pins each pod to its node",
    ),
)

CACHE_SIZE = 4096
_cache: OrderedDict[tuple[str, ...], tuple[Mismatch, ...]] = OrderedDict()
_lock = threading.Lock()


def pod_mismatches(pod: Obj, template: Mapping[str, Any], owner: Obj) -> list[Mismatch]:
    """How the pod differs from `template` (a pod template: metadata and spec) of `owner`
    (its ReplicaSet, StatefulSet or DaemonSet), beyond what pod creation adds (cached)."""
    meta = pod.get("metadata") or {}
    omet = owner.get("metadata") or {}
    key = (
        str(meta.get("uid")),
        str(meta.get("resourceVersion")),
        str(omet.get("uid")),
        str(omet.get("resourceVersion")),
    )
    with _lock:
        found = _cache.get(key)
        if found is not None:
            _cache.move_to_end(key)
            return list(found)
    found = tuple(_compare(pod, template, str(owner.get("kind") or "")))
    with _lock:
        _cache[key] = found
        while len(_cache) > CACHE_SIZE:
            _cache.popitem(last=False)
    return list(found)


def _compare(pod: Obj, template: Mapping[str, Any], owner_kind: str) -> list[Mismatch]:
    name = str((pod.get("metadata") or {}).get("name"))
    want_meta = template.get("metadata") or {}
    want_spec = template.get("spec") or {}
    got = as_made_from(pod, want_spec, want_meta, owner_kind)
    desired = {"spec": want_spec, "metadata": want_meta}
    return diff_object(f"pod[{name}]", desired, got)


def as_made_from(
    pod: Obj, template_spec: Mapping[str, Any], template_meta: Mapping[str, Any], owner_kind: str
) -> Obj:
    """The pod with what pod creation adds (`SYSTEM_ADDED`) taken away where the template
    leaves it unset: what is left must equal the template."""
    meta = pod.get("metadata") or {}
    want_labels = template_meta.get("labels") or {}
    labels = {
        k: v
        for k, v in (meta.get("labels") or {}).items()
        if k in want_labels or k not in CONTROLLER_LABELS
    }
    spec = dict(pod.get("spec") or {})
    for field in (
        "nodeName",
        "serviceAccountName",
        "serviceAccount",
        "priority",
        "priorityClassName",
        "preemptionPolicy",
        "enableServiceLinks",
        "overhead",
    ):
        if field in spec and is_empty(template_spec.get(field)):
            spec.pop(field)
    if owner_kind == "StatefulSet":
        for field in ("hostname", "subdomain"):
            if is_empty(template_spec.get(field)):
                spec.pop(field, None)
    if owner_kind == "DaemonSet":
        _unpin(spec, template_spec)
    spec["tolerations"] = _tolerations(spec.get("tolerations"), template_spec.get("tolerations"))
    dropped = _system_volumes(spec.get("volumes"), template_spec.get("volumes"), owner_kind)
    spec["volumes"] = [v for v in spec.get("volumes") or [] if v.get("name") not in dropped]
    host_network = bool(spec.get("hostNetwork"))
    for field in ("initContainers", "containers"):
        wanted = {c.get("name"): c for c in template_spec.get(field) or []}
        spec[field] = [
            _container(c, wanted.get(c.get("name")) or {}, dropped, host_network)
            for c in spec.get(field) or []
        ]
    for field in ("tolerations", "volumes", "initContainers", "containers"):
        if is_empty(spec[field]):
            spec.pop(field)
    return {"metadata": {"labels": labels, "annotations": meta.get("annotations")}, "spec": spec}


def _tolerations(got: Any, want: Any) -> list[Any]:
    wanted = list(want or [])
    return [t for t in got or [] if t in wanted or not _system_toleration(t)]


def _system_toleration(toleration: Mapping[str, Any]) -> bool:
    return str(toleration.get("key") or "").startswith(SYSTEM_TAINT_PREFIX)


def _system_volumes(got: Any, want: Any, owner_kind: str) -> set[str]:
    """Names of the pod's volumes that pod creation added (the template has none of them)."""
    wanted = {v.get("name") for v in want or []}
    found = set()
    for volume in got or []:
        name = str(volume.get("name"))
        if name in wanted:
            continue
        if name.startswith(SA_VOLUME_PREFIX) and "projected" in volume:
            found.add(name)
        elif owner_kind == "StatefulSet" and "persistentVolumeClaim" in volume:
            found.add(name)  # a volumeClaimTemplate's claim, `<template>-<pod>`
    return found


def _container(
    got: Mapping[str, Any], want: Mapping[str, Any], dropped: set[str], host_network: bool
) -> Obj:
    out = dict(got)
    mounts = [m for m in got.get("volumeMounts") or [] if m.get("name") not in dropped]
    if mounts:
        out["volumeMounts"] = mounts
    else:
        out.pop("volumeMounts", None)
    resources = _resources(got.get("resources") or {}, want.get("resources") or {})
    if resources:
        out["resources"] = resources
    else:
        out.pop("resources", None)
    if host_network and got.get("ports"):
        wanted = {p.get("containerPort"): p for p in want.get("ports") or []}
        out["ports"] = [
            {k: v for k, v in p.items() if k != "hostPort"}
            if "hostPort" not in (wanted.get(p.get("containerPort")) or {})
            and p.get("hostPort") == p.get("containerPort")
            else p
            for p in got["ports"]
        ]
    return out


def _resources(got: Mapping[str, Any], want: Mapping[str, Any]) -> Obj:
    out = dict(got)
    for part in ("requests", "limits"):
        wanted = want.get(part) or {}
        kept = {k: v for k, v in (got.get(part) or {}).items() if k in wanted}
        if kept:
            out[part] = kept
        else:
            out.pop(part, None)
    return out


def _unpin(spec: Obj, template_spec: Mapping[str, Any]) -> None:
    """A DaemonSet pod's node pin (the controller's) replaced by the template's affinity."""
    affinity = spec.get("affinity") or {}
    required = (affinity.get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = required.get("nodeSelectorTerms") or []
    pinned = len(terms) == 1 and [f.get("key") for f in terms[0].get("matchFields") or []] == [
        "metadata.name"
    ]
    if not pinned:
        return
    want = template_spec.get("affinity")
    want_required = ((want or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    )
    node = dict(affinity.get("nodeAffinity") or {})
    if want_required is None:
        node.pop("requiredDuringSchedulingIgnoredDuringExecution", None)
    else:
        node["requiredDuringSchedulingIgnoredDuringExecution"] = want_required
    rest = (
        {**affinity, "nodeAffinity": node}
        if node
        else {k: v for k, v in affinity.items() if k != "nodeAffinity"}
    )
    if rest:
        spec["affinity"] = rest
    else:
        spec.pop("affinity", None)
