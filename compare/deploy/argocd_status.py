"""Status rows for WebApps deployed through Argo CD: each Application of charts/webapp with its
sync and health status and Argo CD's last self-heal, judged against the chart's rendered
manifest for the Application's values plus Argo CD's tracking annotation (the desired state
`compare.deploy.argocd` deploys to)."""

from __future__ import annotations

from typing import Any

from kubernetes import client

from compare.deploy.argocd import argocd_applied, last_self_heal
from compare.deploy.argocd_app import APPLICATION_API, instance_name
from compare.deploy.helm import CHART_NAME, render
from compare.deploy.rows import DeployedApp, judged_app
from compare.errors import CompareError
from compare.judge import REQUEST_TIMEOUT, judged_objects
from compare.kube.apierror import if_found

APPROACH = "argocd"


def list_applications(api: client.ApiClient, namespace: str | None) -> list[dict[str, Any]]:
    """Applications of charts/webapp, in one namespace or all; none when the CRD is not
    installed."""
    custom = client.CustomObjectsApi(api)
    what = "listing Argo CD Applications failed"
    if namespace is None:
        found = if_found(
            what,
            custom.list_cluster_custom_object,
            *APPLICATION_API,
            _request_timeout=REQUEST_TIMEOUT,
        )
    else:
        found = if_found(
            what,
            custom.list_namespaced_custom_object,
            *APPLICATION_API[:2],
            namespace,
            APPLICATION_API[2],
            _request_timeout=REQUEST_TIMEOUT,
        )
    items: list[dict[str, Any]] = (found or {}).get("items") or []
    return [
        app
        for app in items
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


def argocd_apps(api: client.ApiClient, namespace: str | None) -> list[DeployedApp]:
    rows = []
    for app in list_applications(api, namespace):
        meta, spec = app.get("metadata") or {}, app.get("spec") or {}
        name = str(meta.get("name"))
        ns = str((spec.get("destination") or {}).get("namespace") or meta.get("namespace"))
        helm = (spec.get("source") or {}).get("helm") or {}
        release = str(helm.get("releaseName") or name)
        detail = argocd_detail(api, app)
        try:
            rendered = render(helm.get("valuesObject") or {}, release=release, namespace=ns)
            objects = argocd_applied(
                judged_objects(rendered),
                application=instance_name(str(meta.get("namespace")), name),
                namespace=ns,
            )
        except CompareError as exc:
            row = DeployedApp(
                approach=APPROACH,
                name=name,
                namespace=ns,
                detail=detail,
                desired_replicas=None,
                ready_replicas=None,
                image=None,
                state=f"values do not render: {exc.message}",
            )
        else:
            row = judged_app(
                api, approach=APPROACH, name=name, namespace=ns, detail=detail, objects=objects
            )
        rows.append(row)
    return sorted(rows, key=lambda r: (r.namespace, r.name))
