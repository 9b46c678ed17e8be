"""Desired and live objects as the API serves them (camelCase JSON), for the pure judging tests.

The desired objects are the operator's own builders' output for a small WebApp, taken as
already defaulted (`as_given`); live objects are copies of them with what the API server adds
(uid, generation, status), so every judged field is real and complete.
"""

from __future__ import annotations

import copy
from typing import Any

from compare.judge import DesiredObjects, Reading, as_given
from compare.judge.pods import SA_MOUNT
from compare.webapp import parse_webapp
from webapp_operator.builders import build_deployment, build_service, owner_reference

WEBAPP = parse_webapp(
    {
        "apiVersion": "example.com/v1",
        "kind": "WebApp",
        "metadata": {"name": "shop"},
        "spec": {"replicas": 3, "image": "shop:v1", "port": 8080},
    }
)
_OWNER = owner_reference({"metadata": {"name": "shop", "uid": "cr-1"}})
DEPLOYMENT = build_deployment(WEBAPP, "ns", _OWNER)
SERVICE = build_service(WEBAPP, "ns", _OWNER)
DESIRED: DesiredObjects = as_given([DEPLOYMENT, SERVICE])
SELECTOR = DEPLOYMENT["spec"]["selector"]["matchLabels"]


def deployment(
    uid: str = "dep-1",
    *,
    replicas: int = 3,
    image: str = "shop:v1",
    generation: int = 1,
    observed: int = 1,
    revision: int = 1,
) -> dict[str, Any]:
    obj = copy.deepcopy(DEPLOYMENT)
    obj["metadata"].update(uid=uid, generation=generation, resourceVersion="1")
    # What the controller records of its newest ReplicaSet (a reading holding a ReplicaSet
    # numbered above it has not got the Deployment's newest state yet).
    annotations = obj["metadata"].setdefault("annotations", {})
    annotations["deployment.kubernetes.io/revision"] = str(revision)
    obj["spec"]["replicas"] = replicas
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = image
    obj["status"] = {
        "observedGeneration": observed,
        "replicas": replicas,
        "readyReplicas": replicas,
        "updatedReplicas": replicas,
    }
    return obj


def service(uid: str = "svc-1", *, port: int = 8080) -> dict[str, Any]:
    obj = copy.deepcopy(SERVICE)
    obj["metadata"].update(uid=uid, resourceVersion="1")
    obj["spec"]["ports"][0]["port"] = port
    obj["spec"]["clusterIP"] = "10.96.0.17"  # allocated by the API server: allowed
    return obj


def replicaset(
    uid: str = "rs-1", owner: str = "dep-1", revision: int = 1, *, image: str = "shop:v1"
) -> dict[str, Any]:
    """A ReplicaSet of the Deployment's template (with the hash label the controller adds)."""
    template = copy.deepcopy(deployment(image=image)["spec"]["template"])
    template["metadata"]["labels"]["pod-template-hash"] = f"h{uid}"
    return {
        "metadata": {
            "name": f"shop-{uid}",
            "uid": uid,
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
            "ownerReferences": [{"uid": owner, "controller": True}],
        },
        "spec": {"template": template},
    }


def pod(
    uid: str,
    owner: str = "rs-1",
    *,
    ready: bool = True,
    terminating: bool = False,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A pod as its ReplicaSet `owner` made it from the Deployment's template (with what pod
    creation adds: a node, the ServiceAccount token volume, the system's tolerations)."""
    template = copy.deepcopy(DEPLOYMENT["spec"]["template"])
    template_labels = {**template["metadata"]["labels"], "pod-template-hash": f"h{owner}"}
    meta: dict[str, Any] = {
        "name": f"shop-{uid}",
        "uid": uid,
        "resourceVersion": "1",
        "labels": template_labels if labels is None else dict(labels),
        "ownerReferences": [{"uid": owner, "controller": True}],
    }
    if terminating:
        meta["deletionTimestamp"] = "2026-12-02T12:00:00Z"
    spec = template["spec"]
    spec.update(nodeName="node-1", serviceAccountName="default", serviceAccount="default")
    spec["volumes"] = [*spec.get("volumes", []), {"name": "kube-api-access-x1", "projected": {}}]
    for container in spec["containers"]:
        mount = {"name": "kube-api-access-x1", "mountPath": SA_MOUNT, "readOnly": True}
        container["volumeMounts"] = [*container.get("volumeMounts", []), mount]
    spec["tolerations"] = [
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"}
    ]
    return {
        "metadata": meta,
        "spec": spec,
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def reading(
    at: float = 0.0,
    *,
    dep: dict[str, Any] | None = None,
    svc: dict[str, Any] | None = None,
    rs: list[dict[str, Any]] | None = None,
    pods: list[dict[str, Any]] | None = None,
    missing: tuple[str, ...] = (),
) -> Reading:
    """A reading at `at`; defaults are the healthy state."""
    deployments = [] if "deployment" in missing else [dep or deployment()]
    services = [] if "service" in missing else [svc or service()]
    replicasets = [] if "replicaset" in missing else (rs or [replicaset()])
    live_pods = pods if pods is not None else [pod("p1"), pod("p2"), pod("p3")]
    return Reading(
        at,
        {
            "Deployment": {d["metadata"]["name"]: d for d in deployments},
            "Service": {s["metadata"]["name"]: s for s in services},
            "ReplicaSet": {r["metadata"]["name"]: r for r in replicasets},
            "Pod": {p["metadata"]["name"]: p for p in live_pods},
        },
    )
