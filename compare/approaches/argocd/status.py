"""What `compare status` finds and says of Argo CD Applications: the Applications of
charts/webapp (`list_applications`) and, in the STATUS column, an Application's sync and health
status and Argo CD's last self-heal (`argocd_detail`); the row is the argocd arm's
(`compare.approaches.argocd.arm.target_argocd_app`)."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from compare.approaches.argocd.application import APPLICATIONS
from compare.approaches.argocd.sync import last_self_heal
from compare.deploy.charts import CHART_NAME
from compare.kube import served


def list_applications(api: client.ApiClient, namespace: str | None) -> list[dict[str, Any]]:
    """Applications of charts/webapp, in one namespace or all; none when the CRD is not
    installed."""
    return [
        app
        for app in served.listed(api, APPLICATIONS, namespace)
        if ((app.get("spec") or {}).get("source") or {}).get("chart") == CHART_NAME
    ]


def argocd_detail(api: client.ApiClient, app: dict[str, Any]) -> str:
    """Its sync and health status as Argo CD reports them, and its newest self-heal."""
    meta, status = app.get("metadata") or {}, app.get("status") or {}
    sync = (status.get("sync") or {}).get("status") or "unknown"
    health = (status.get("health") or {}).get("status") or "unknown"
    heal = last_self_heal(api, str(meta.get("namespace")), str(meta.get("name")))
    healed = (
        f"last self-heal {heal.started_at}: {', '.join(heal.resources)}"
        if heal is not None
        else "no self-heal"
    )
    return f"sync {sync}, health {health}; {healed}"
