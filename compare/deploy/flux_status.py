"""`compare status` rows for WebApps deployed through Flux: each HelmRelease with its Ready
condition and helm-controller's last drift Event, judged against the chart's rendered manifest
for the HelmRelease's values (the helm approach's desired state)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kubernetes import client

from compare.deploy.flux import (
    condition,
    last_drift_event,
    list_helm_releases,
)
from compare.deploy.helm import render
from compare.deploy.ownership import flux_applied
from compare.deploy.rows import DeployedApp, judged_app
from compare.errors import CompareError
from compare.judge import judged_objects


def _ready_text(obj: dict[str, Any]) -> str:
    ready = condition(obj, "Ready")
    if ready is None:
        return "Ready unknown"
    message = str(ready.get("message") or "").splitlines()
    text = f"Ready {ready.get('status')} ({ready.get('reason')})"
    if ready.get("status") != "True" and message:
        text += f": {message[0][:120]}"
    return text


def _drift_text(api: client.ApiClient, namespace: str, name: str) -> str:
    event = last_drift_event(api, namespace, name)
    if event is None:
        return "no drift event"
    when = event["time"]
    stamp = when.astimezone(dt.UTC).strftime("%H:%M:%SZ") if when else "?"
    lines = [line.strip() for line in event["message"] if line.strip()]
    what = lines[1] if len(lines) > 1 else (lines[0] if lines else "")
    return f"last drift {stamp}: {what[:120]}"


def flux_detail(api: client.ApiClient, obj: dict[str, Any]) -> str:
    """A HelmRelease's Ready condition and helm-controller's last drift Event on it."""
    meta = obj.get("metadata") or {}
    name, ns = str(meta.get("name")), str(meta.get("namespace"))
    return f"{_ready_text(obj)}; {_drift_text(api, ns, name)}"


def flux_apps(api: client.ApiClient, namespace: str | None) -> list[DeployedApp]:
    apps = []
    for obj in list_helm_releases(api, namespace):
        meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
        name, ns = str(meta.get("name")), str(meta.get("namespace"))
        release = str(spec.get("releaseName") or name)
        detail = flux_detail(api, obj)
        try:
            rendered = render(spec.get("values") or {}, release=release, namespace=ns)
            objects = flux_applied(
                judged_objects(rendered), release=release, namespace=ns, helmrelease=name
            )
        except CompareError as exc:
            app = DeployedApp(
                approach="flux",
                name=name,
                namespace=ns,
                detail=detail,
                desired_replicas=None,
                ready_replicas=None,
                image=None,
                state=f"values do not render: {exc.message}",
            )
        else:
            app = judged_app(
                api, approach="flux", name=name, namespace=ns, detail=detail, objects=objects
            )
        apps.append(app)
    return sorted(apps, key=lambda a: (a.namespace, a.name))
