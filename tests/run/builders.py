"""Live objects as the API serves them (camelCase JSON), for the pure judging tests."""

from __future__ import annotations

from typing import Any

from compare.chaos.state import Snapshot
from compare.webapp import DesiredState, desired_state, parse_webapp

WEBAPP = parse_webapp(
    {
        "apiVersion": "example.com/v1",
        "kind": "WebApp",
        "metadata": {"name": "shop"},
        "spec": {"replicas": 3, "image": "shop:v1", "port": 8080},
    }
)
DESIRED: DesiredState = desired_state(WEBAPP)


def deployment(
    uid: str = "dep-1",
    *,
    replicas: int = 3,
    image: str = "shop:v1",
    generation: int = 1,
    observed: int = 1,
) -> dict[str, Any]:
    return {
        "metadata": {"name": "shop", "uid": uid, "generation": generation},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": dict(DESIRED.selector)},
            "template": {
                "metadata": {"labels": dict(DESIRED.template_labels)},
                "spec": {
                    "containers": [
                        {
                            "name": "webapp",
                            "image": image,
                            "ports": [{"name": "http", "containerPort": 8080}],
                        }
                    ]
                },
            },
        },
        "status": {
            "observedGeneration": observed,
            "replicas": replicas,
            "readyReplicas": replicas,
            "updatedReplicas": replicas,
        },
    }


def service(uid: str = "svc-1", *, port: int = 8080) -> dict[str, Any]:
    return {
        "metadata": {"name": "shop", "uid": uid},
        "spec": {
            "type": "ClusterIP",
            "selector": dict(DESIRED.selector),
            "ports": [{"name": "http", "port": port, "targetPort": "http"}],
        },
    }


def replicaset(uid: str = "rs-1", owner: str = "dep-1", revision: int = 1) -> dict[str, Any]:
    return {
        "metadata": {
            "uid": uid,
            "annotations": {"deployment.kubernetes.io/revision": str(revision)},
            "ownerReferences": [{"uid": owner, "controller": True}],
        }
    }


def pod(
    uid: str, owner: str = "rs-1", *, ready: bool = True, terminating: bool = False
) -> dict[str, Any]:
    meta: dict[str, Any] = {"uid": uid, "ownerReferences": [{"uid": owner, "controller": True}]}
    if terminating:
        meta["deletionTimestamp"] = "2026-12-02T12:00:00Z"
    return {
        "metadata": meta,
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def snapshot(
    at: float,
    *,
    dep: dict[str, Any] | None = None,
    svc: dict[str, Any] | None = None,
    rs: dict[str, Any] | None = None,
    pods: list[dict[str, Any]] | None = None,
    took: float = 0.01,
    missing: tuple[str, ...] = (),
) -> Snapshot:
    """A reading started at `at - took`; defaults are the healthy state."""
    return Snapshot(
        started=at - took,
        at=at,
        deployment=None if "deployment" in missing else (dep or deployment()),
        service=None if "service" in missing else (svc or service()),
        replicaset=None if "replicaset" in missing else (rs or replicaset()),
        pods=pods if pods is not None else [pod("p1"), pod("p2"), pod("p3")],
    )
