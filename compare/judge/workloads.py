"""Rules by workload kind that a field-by-field diff cannot express.

Each kind's controller owns part of what it runs, and the judge follows the controller's own
rule instead of a number picked here:

- **HorizontalPodAutoscaler**: a workload that an HPA of the same desired set scales has its
  replicas owned by the HPA (the chart usually leaves `replicas` out, the API defaults it to 1
  and the HPA moves it): any value within the HPA's `[minReplicas, maxReplicas]` is the desired
  state, whatever the chart says; outside it is drift (right after an install, until the HPA
  controller's first sync has moved it into the range). The rollout rule then wants the live
  `replicas`.
- **DaemonSet**: its controller wants one pod per node its pod template may run on. Its
  `status.desiredNumberScheduled` is that count, *proven against the node set*: the nodes that
  match the template's nodeSelector and required node affinity and whose NoSchedule/NoExecute
  taints its tolerations (and the controller's own) accept. A count that disagrees is reported
  (the controller has not caught up with a node change yet, or something is wrong).
- **StatefulSet**: pods are its ordinals `<name>-<i>` for `i` in `[start, start + replicas)`;
  a pod outside them (a scale-down not done) or a missing ordinal keeps the state from holding.
- **Job**: judged by completion: a Job that failed is a problem with its reason; one still
  running is not yet the desired state (a deploy waits for it), `Complete` holds. Its pods,
  finished, are not "running" pods of anything.
- **An object's own identity** in its spec (a Job's generated selector and pod labels carry its
  UID): the dry-run's UID stands for "this object's own", so the desired object is compared
  with the live one's UID in its place.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

Obj = dict[str, Any]

# Tolerations the DaemonSet controller adds to every daemon pod (pkg/controller/daemon/util):
# daemon pods run on not-ready, unreachable, pressured and unschedulable nodes.
DAEMON_TOLERATIONS: tuple[Mapping[str, str], ...] = (
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
)
HOST_NETWORK_TOLERATION = {
    "key": "node.kubernetes.io/network-unavailable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


# -- HorizontalPodAutoscaler ------------------------------------------------------------------


def hpa_ranges(objects: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], tuple[int, int]]:
    """(kind, name) of each workload an HPA among `objects` scales -> its replica range."""
    ranges: dict[tuple[str, str], tuple[int, int]] = {}
    for obj in objects:
        if obj.get("kind") != "HorizontalPodAutoscaler":
            continue
        spec = _spec(obj)
        ref = spec.get("scaleTargetRef") or {}
        low = int(spec.get("minReplicas") or 1)
        high = int(spec.get("maxReplicas") or low)
        ranges[(str(ref.get("kind")), str(ref.get("name")))] = (low, max(low, high))
    return ranges


def scaled_replicas_allowed(
    kind: str, name: str, live: Mapping[str, Any] | None, ranges: Mapping[tuple[str, str], Any]
) -> bool:
    """Whether the live workload's replicas are the HPA's to set and within its range."""
    found = ranges.get((kind, name))
    if found is None or live is None:
        return False
    replicas = _spec(live).get("replicas")
    return isinstance(replicas, int) and found[0] <= replicas <= found[1]


# -- DaemonSet --------------------------------------------------------------------------------


def _labels_match(labels: Mapping[str, str], selector: Mapping[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _expression_matches(values: Mapping[str, Any], expr: Mapping[str, Any]) -> bool:
    key, op = str(expr.get("key")), expr.get("operator")
    wanted = [str(v) for v in expr.get("values") or []]
    present = key in values
    got = str(values.get(key)) if present else None
    if op == "In":
        return present and got in wanted
    if op == "NotIn":
        return not present or got not in wanted
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and wanted:
        try:
            number, bound = int(str(got)), int(wanted[0])
        except ValueError:
            return False
        return number > bound if op == "Gt" else number < bound
    return False


def _term_matches(node: Mapping[str, Any], term: Mapping[str, Any]) -> bool:
    labels = _meta(node).get("labels") or {}
    fields = {"metadata.name": _meta(node).get("name")}
    exprs = term.get("matchExpressions") or []
    field_exprs = term.get("matchFields") or []
    if not exprs and not field_exprs:
        return False  # an empty term matches nothing (the scheduler's rule)
    return all(_expression_matches(labels, e) for e in exprs) and all(
        _expression_matches(fields, e) for e in field_exprs
    )


def _tolerates(taint: Mapping[str, Any], tolerations: Sequence[Mapping[str, Any]]) -> bool:
    for tol in tolerations:
        effect = tol.get("effect")
        if effect and effect != taint.get("effect"):
            continue
        key = tol.get("key")
        if tol.get("operator") == "Exists":
            if not key or key == taint.get("key"):
                return True
        elif key == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or ""):
            return True
    return False


def node_accepts(node: Mapping[str, Any], pod_spec: Mapping[str, Any]) -> bool:
    """Whether the DaemonSet controller would run a pod of `pod_spec` on `node`: its
    nodeSelector, its required node affinity and the node's NoSchedule/NoExecute taints
    against its tolerations plus the ones the controller adds."""
    labels = _meta(node).get("labels") or {}
    if not _labels_match(labels, pod_spec.get("nodeSelector") or {}):
        return False
    affinity = ((pod_spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution"
    ) or {}
    terms = affinity.get("nodeSelectorTerms")
    if terms is not None and not any(_term_matches(node, t) for t in terms):
        return False
    tolerations = [*(pod_spec.get("tolerations") or []), *DAEMON_TOLERATIONS]
    if pod_spec.get("hostNetwork"):
        tolerations.append(HOST_NETWORK_TOLERATION)
    for taint in _spec(node).get("taints") or []:
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerates(
            taint, tolerations
        ):
            return False
    return True


def daemon_nodes(daemonset: Mapping[str, Any], nodes: Iterable[Mapping[str, Any]]) -> list[str]:
    """The names of the nodes the DaemonSet's pod template may run on."""
    pod_spec = _spec(_spec(daemonset).get("template") or {})
    return sorted(str(_meta(n).get("name")) for n in nodes if node_accepts(n, pod_spec))


def daemonset_problems(
    daemonset: Mapping[str, Any], nodes: Sequence[Mapping[str, Any]], *, root: str
) -> list[str]:
    """Whether the controller's count of wanted pods is the node set's (empty: it is)."""
    if not nodes:
        return []  # nodes not read (a reading without them): nothing to prove against
    status = daemonset.get("status") or {}
    meta = _meta(daemonset)
    if (status.get("observedGeneration") or 0) < (meta.get("generation") or 0):
        return []  # the rollout rule reports it
    want = len(daemon_nodes(daemonset, nodes))
    got = int(status.get("desiredNumberScheduled") or 0)
    if got == want:
        return []
    return [
        f"{root}.status.desiredNumberScheduled: {got}, but {want} node(s) match its pod"
        " template (nodeSelector, node affinity, taints)"
    ]


# -- StatefulSet ------------------------------------------------------------------------------


def statefulset_problems(
    statefulset: Mapping[str, Any], pods: Iterable[Mapping[str, Any]], *, root: str
) -> list[str]:
    """Its running pods are exactly its ordinals (empty: they are)."""
    meta, spec = _meta(statefulset), _spec(statefulset)
    uid, name = meta.get("uid"), str(meta.get("name"))
    start = int((spec.get("ordinals") or {}).get("start") or 0)
    replicas = int(spec.get("replicas", 1))
    want = {f"{name}-{i}" for i in range(start, start + replicas)}
    owned = {
        str(_meta(p).get("name"))
        for p in pods
        if not _meta(p).get("deletionTimestamp")
        and any(
            r.get("uid") == uid and r.get("controller")
            for r in _meta(p).get("ownerReferences") or []
        )
    }
    found = []
    if extra := sorted(owned - want):
        found.append(f"{root}.pods: {', '.join(extra)} beyond its ordinals")
    if missing := sorted(want - owned):
        found.append(f"{root}.pods: {', '.join(missing)} missing")
    return found


# -- Job --------------------------------------------------------------------------------------


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {
        str(c.get("type")): c
        for c in (obj.get("status") or {}).get("conditions") or []
        if c.get("status") == "True"
    }


def job_problems(job: Mapping[str, Any], *, root: str) -> list[str]:
    """Why a Job is not complete (empty: it completed)."""
    conditions = _conditions(job)
    if "Failed" in conditions:
        failed = conditions["Failed"]
        return [f"{root}.status: failed ({failed.get('reason')}: {failed.get('message')})"]
    if "Complete" in conditions:
        return []
    status = job.get("status") or {}
    want = _spec(job).get("completions", 1)
    return [
        f"{root}.status: not complete yet ({status.get('succeeded') or 0} of {want} succeeded,"
        f" {status.get('active') or 0} active)"
    ]


def finished(pod: Mapping[str, Any]) -> bool:
    """A pod that ran to its end (Succeeded or Failed): it runs nothing any more."""
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


# -- an object's own identity -----------------------------------------------------------------


def carries_own_uid(defaulted: Mapping[str, Any]) -> bool:
    """Whether the dry-run's object names its own UID outside its metadata (a Job's
    generated selector): then it must be compared with the live object's UID in its place."""
    uid = _meta(defaulted).get("uid")
    if not uid:
        return False
    rest = {k: v for k, v in defaulted.items() if k != "metadata"}
    labels = _meta(defaulted).get("labels") or {}
    return str(uid) in json.dumps(rest) or str(uid) in json.dumps(labels)


def as_own(defaulted: Mapping[str, Any], live: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """`defaulted` with its dry-run UID replaced by the live object's (see `carries_own_uid`)."""
    old, new = _meta(defaulted).get("uid"), _meta(live or {}).get("uid")
    if not old or not new or old == new:
        return defaulted
    replaced: Obj = replaced_value(defaulted, str(old), str(new))
    return replaced


def replaced_value(node: Any, old: str, new: str) -> Any:
    """`node` with every string value equal to `old` replaced by `new` (the dry-run's own
    identity, its UID or generated name, standing for the live object's)."""
    if isinstance(node, dict):
        return {key: replaced_value(value, old, new) for key, value in node.items()}
    if isinstance(node, list):
        return [replaced_value(value, old, new) for value in node]
    return new if node == old else node
