"""One reading of a WebApp's live objects, and whether its desired state holds in it.

`compare_live` judges every owned field of the Deployment and the Service. Readiness is judged
from the pods themselves, not from the Deployment's status: that status is derived by two
controllers in turn and lags the pods both ways (right after a pod is deleted it still counts
it as Ready; after its replacement is Ready it may still say 2), so judging by it makes the
verdict flap. The desired state holds when the Deployment controller has seen the current spec
(observedGeneration), exactly `replicas` pods of its current ReplicaSet are Ready and not
terminating, and no pod of another ReplicaSet still runs. The probes and the trial engine
both judge with `problems`.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from compare.deploy.live import read_object
from compare.webapp import DesiredState, compare_live

REVISION = "deployment.kubernetes.io/revision"


@dataclass(frozen=True)
class Snapshot:
    """The live objects (API JSON) read between `started` and `at` (time.time() seconds)."""

    started: float
    at: float
    deployment: dict[str, Any] | None
    service: dict[str, Any] | None
    replicaset: dict[str, Any] | None  # the Deployment's current ReplicaSet
    pods: list[dict[str, Any]] = field(default_factory=list)  # every pod the selector matches
    # Deployment and Service only: an owned field differed, so ReplicaSets and pods were not read.
    partial: bool = False

    def ready_pods(self) -> list[dict[str, Any]]:
        """Ready, not terminating pods controlled by the current ReplicaSet."""
        owner = _uid(self.replicaset)
        return [
            pod
            for pod in self.pods
            if owner is not None
            and _controller_uid(pod) == owner
            and not _terminating(pod)
            and _ready(pod)
        ]

    def stale_pods(self) -> list[dict[str, Any]]:
        """Running (not terminating) pods of any other ReplicaSet: a rollout not finished."""
        owner = _uid(self.replicaset)
        return [p for p in self.pods if not _terminating(p) and _controller_uid(p) != owner]

    def uids(self) -> dict[str, Any]:
        return {
            "deployment": _uid(self.deployment),
            "service": _uid(self.service),
            "replicaset": _uid(self.replicaset),
            "pods": sorted(_uid(p) or "" for p in self.pods if not _terminating(p)),
        }

    def objects(self) -> dict[str, Any]:
        """Roots for `compare.chaos.fields.read_path`."""
        return {
            "deployment": self.deployment,
            "service": self.service,
            "replicaset": self.replicaset,
            "pods": {
                "ready": len(self.ready_pods()),
                "uids": sorted(_uid(p) or "" for p in self.ready_pods()),
            },
        }


def problems(snapshot: Snapshot, desired: DesiredState) -> list[str]:
    """Everything that keeps the desired state from holding (empty: it holds)."""
    found = [
        str(m)
        for m in compare_live(desired, snapshot.deployment, snapshot.service, require_ready=False)
    ]
    if snapshot.deployment is None or snapshot.partial:
        return found
    meta = snapshot.deployment.get("metadata") or {}
    status = snapshot.deployment.get("status") or {}
    generation, observed = meta.get("generation") or 0, status.get("observedGeneration") or 0
    if observed < generation:
        # Until the controller has seen the spec, "its current ReplicaSet" is not yet known.
        found.append(f"deployment.status.observedGeneration: want {generation}, got {observed}")
    ready = len(snapshot.ready_pods())
    if ready != desired.replicas:
        found.append(f"pods.ready: want {desired.replicas}, got {ready}")
    stale = len(snapshot.stale_pods())
    if stale:
        found.append(f"pods.stale: {stale} pod(s) of another ReplicaSet still running")
    return found


def read_snapshot(
    api: client.ApiClient,
    namespace: str,
    desired: DesiredState,
    *,
    pods_if_needed: bool = False,
) -> Snapshot:
    """Read the Deployment, Service, ReplicaSets and pods (raw JSON: no model round trip).

    With `pods_if_needed`, a reading whose Deployment or Service already differs in an owned
    field stops there (`partial`): it cannot show the desired state, and half the requests
    keep a long unhealed window from loading the API server.
    """
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    selector = ",".join(f"{k}={v}" for k, v in sorted(desired.selector.items()))
    started = time.time()
    deployment = read_object(apps.read_namespaced_deployment, desired.name, namespace)
    service = read_object(core.read_namespaced_service, desired.name, namespace)
    if pods_if_needed and compare_live(desired, deployment, service, require_ready=False):
        return Snapshot(started, time.time(), deployment, service, None, [], partial=True)
    replicasets = _list(apps.list_namespaced_replica_set, namespace, selector)
    pods = _list(core.list_namespaced_pod, namespace, selector)
    return Snapshot(
        started=started,
        at=time.time(),
        deployment=deployment,
        service=service,
        replicaset=current_replicaset(deployment, replicasets),
        pods=pods,
    )


def current_replicaset(
    deployment: dict[str, Any] | None, replicasets: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """The ReplicaSet the Deployment controls with the highest revision."""
    uid = _uid(deployment)
    if uid is None:
        return None
    owned = [rs for rs in replicasets if _controller_uid(rs) == uid and not _terminating(rs)]
    if not owned:
        return None
    return max(owned, key=lambda rs: int(_annotations(rs).get(REVISION, "0") or 0))


def _list(call: Any, namespace: str, selector: str) -> list[dict[str, Any]]:
    response = call(namespace, label_selector=selector, _preload_content=False)
    items: list[dict[str, Any]] = json.loads(response.data).get("items") or []
    return items


def _uid(obj: dict[str, Any] | None) -> str | None:
    return None if obj is None else (obj.get("metadata") or {}).get("uid")


def _annotations(obj: dict[str, Any]) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _controller_uid(obj: dict[str, Any]) -> str | None:
    refs = (obj.get("metadata") or {}).get("ownerReferences") or []
    return next((ref.get("uid") for ref in refs if ref.get("controller")), None)


def _terminating(obj: dict[str, Any]) -> bool:
    return bool((obj.get("metadata") or {}).get("deletionTimestamp"))


def _ready(pod: dict[str, Any]) -> bool:
    conditions = (pod.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions)
