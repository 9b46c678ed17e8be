"""Reading the live Deployment/Service of a WebApp and waiting for its desired state.

Shared by both approaches, the chaos probes and the trial runner, so that "the desired state
holds" is judged by one function (`compare.webapp.compare_live`) everywhere.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.errors import CompareError
from compare.webapp import DesiredState, Mismatch, compare_live

POLL_S = 0.1


@dataclass(frozen=True)
class LiveState:
    """The live objects as API JSON (camelCase dicts); None when absent."""

    deployment: dict[str, Any] | None
    service: dict[str, Any] | None


def read_object(call: Any, name: str, namespace: str) -> dict[str, Any] | None:
    """One namespaced object as the API server's JSON (no model round trip); None on 404.
    Other API errors propagate, so pollers can record them and go on."""
    try:
        response = call(name, namespace, _preload_content=False)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    result: dict[str, Any] = json.loads(response.data)
    return result


def read_live(api: client.ApiClient, namespace: str, name: str) -> LiveState:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    try:
        return LiveState(
            deployment=read_object(apps.read_namespaced_deployment, name, namespace),
            service=read_object(core.read_namespaced_service, name, namespace),
        )
    except client.ApiException as exc:
        raise CompareError(f"reading {namespace}/{name} failed: {exc.status} {exc.reason}") from exc


def mismatches(api: client.ApiClient, namespace: str, desired: DesiredState) -> list[Mismatch]:
    live = read_live(api, namespace, desired.name)
    return compare_live(desired, live.deployment, live.service)


def wait_for_desired_state(
    api: client.ApiClient,
    namespace: str,
    desired: DesiredState,
    *,
    timeout: float,
    what: str = "WebApp",
) -> None:
    """Block until the desired state holds (pods Ready included), or raise a one-line error
    naming the first field that still differs."""
    deadline = time.monotonic() + timeout
    while True:
        found = mismatches(api, namespace, desired)
        if not found:
            return
        if time.monotonic() > deadline:
            raise CompareError(
                f"{what} {namespace}/{desired.name} did not reach its desired state within "
                f"{timeout:.0f}s: {found[0]}",
                exit_code=1,
            )
        time.sleep(POLL_S)
