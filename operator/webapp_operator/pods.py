"""Closed world down to pods: a WebApp's pod changed in place is replaced.

No controller restores a pod: the ReplicaSet controller only replaces missing pods, so a pod
whose image (or any other field) was changed in place runs as changed until it is gone. The
operator deletes it and its ReplicaSet makes a correct one. "Changed" is the judge's own rule
(`compare.judge.pods.pod_mismatches`: the pod against its ReplicaSet's template, beyond what
pod creation adds), the same that gives the comparison's verdicts: one definition.

Careful, as a controller that deletes pods must be:
  * rate-limited: at most one pod per WebApp every `POD_REPLACE_INTERVAL_S` seconds (a fault
    that changes every pod at once does not take the whole workload down);
  * a PodDisruptionBudget that selects the pod is respected: the pod is evicted through the
    Eviction API, which refuses (429) while the budget allows no disruption; otherwise it is
    deleted;
  * only the pod that was judged: both carry a uid precondition.

Synchronous and kopf-free, like the reconciler that calls it from its thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.judge.pods import pod_mismatches
from compare.judge.rest import request, resource_path

__all__ = [
    "POD_REPLACE_INTERVAL_S",
    "DriftedPod",
    "PodReplacer",
    "controlling_replicaset",
    "drifted_pods",
    "selects",
]

# At most one pod of a WebApp replaced per this many seconds.
POD_REPLACE_INTERVAL_S = 5.0

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class DriftedPod:
    pod: Obj
    fields: tuple[str, ...]  # the judge's mismatches, each with its wanted and found value

    @property
    def name(self) -> str:
        return str(self.pod["metadata"]["name"])


def controlling_replicaset(pod: Obj) -> str | None:
    """The name of the ReplicaSet that controls the pod, if one does."""
    for ref in (pod.get("metadata") or {}).get("ownerReferences") or []:
        if ref.get("controller") and ref.get("kind") == "ReplicaSet":
            return str(ref.get("name"))
    return None


def drifted_pods(pods: Sequence[Obj], replicasets: Mapping[str, Obj]) -> list[DriftedPod]:
    """The pods (not being deleted) that differ from their ReplicaSet's template (`replicasets`
    by name), by the judge's rule. A pod whose ReplicaSet is unknown is not judged."""
    found = []
    for pod in pods:
        if (pod.get("metadata") or {}).get("deletionTimestamp"):
            continue
        owner = replicasets.get(controlling_replicaset(pod) or "")
        if owner is None:
            continue
        template = (owner.get("spec") or {}).get("template") or {}
        mismatches = pod_mismatches(dict(pod), template, dict(owner))
        if mismatches:
            found.append(DriftedPod(pod, tuple(str(m) for m in mismatches)))
    return found


def selects(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether a LabelSelector selects `labels` (an empty selector selects everything, as a
    policy/v1 PodDisruptionBudget's does; a null one nothing)."""
    if selector is None:
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if labels.get(key) != value:
            return False
    for expr in selector.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if op == "Exists" and not present:
            return False
        if op == "DoesNotExist" and present:
            return False
    return True


class PodReplacer:
    """Deletes (or evicts) drifted pods, one per WebApp per interval; shared by every thread."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        timeout: float,
        interval: float = POD_REPLACE_INTERVAL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._api = api
        self._timeout = timeout
        self._interval = interval
        self._clock = clock
        self._lock = threading.Lock()
        self._last: dict[tuple[str, str], float] = {}

    def forget(self, key: tuple[str, str]) -> None:
        with self._lock:
            self._last.pop(key, None)

    def wait_left(self, key: tuple[str, str]) -> float:
        """Seconds until this WebApp may have a pod replaced again (0: now)."""
        with self._lock:
            last = self._last.get(key)
        return 0.0 if last is None else max(0.0, last + self._interval - self._clock())

    def replace(self, key: tuple[str, str], drifted: DriftedPod) -> str:
        """Evict or delete the pod; how ("evicted" / "deleted"). Raises `ApiException`
        (429: a PodDisruptionBudget allows no disruption now) or a transport error."""
        namespace = key[0]
        meta = drifted.pod["metadata"]
        with self._lock:
            self._last[key] = self._clock()
        options = {"preconditions": {"uid": meta["uid"]}}
        if self._budgeted(namespace, meta.get("labels") or {}):
            request(
                self._api,
                "POST",
                resource_path("v1", "pods", namespace, meta["name"], "eviction"),
                body={
                    "apiVersion": "policy/v1",
                    "kind": "Eviction",
                    "metadata": {"name": meta["name"], "namespace": namespace},
                    "deleteOptions": options,
                },
                timeout=self._timeout,
            )
            return "evicted"
        request(
            self._api,
            "DELETE",
            resource_path("v1", "pods", namespace, meta["name"]),
            body={"apiVersion": "v1", "kind": "DeleteOptions", **options},
            timeout=self._timeout,
        )
        return "deleted"

    def _budgeted(self, namespace: str, labels: Mapping[str, str]) -> bool:
        """Whether a PodDisruptionBudget of the namespace selects the pod (read only when a
        pod is to go: rare, so not worth a watch)."""
        found = request(
            self._api,
            "GET",
            resource_path("policy/v1", "poddisruptionbudgets", namespace),
            timeout=self._timeout,
        )
        return any(
            selects((pdb.get("spec") or {}).get("selector"), labels)
            for pdb in found.get("items") or []
        )
