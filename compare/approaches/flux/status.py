"""What `compare status` says of a HelmRelease in its STATUS column: its Ready condition and
helm-controller's last drift Event (`flux_detail`); the row is the flux arm's
(`compare.approaches.flux.arm.target_flux_app`)."""

from __future__ import annotations

import datetime as dt
from typing import Any

from kubernetes import client

from compare.approaches.flux.controllers import condition, last_drift_event


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
