"""Reading live objects and waiting until a deployment's desired state holds.

The verdict is the judge's (`compare.judge`): the same closed-world rule the trials, the
chaostoolkit probes and `compare status` use. Every API call has a request timeout; a wait
can be cut short by a cancel event (Ctrl-C in a run) and is interruptible in the main thread.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.errors import CompareError
from compare.judge import REQUEST_TIMEOUT, DesiredObjects, problems, read, wait_until_holds
from compare.kube import Deadline, WaitCancelled

# How many of the differences an error names.
SHOWN = 4


def read_object(call: Any, name: str, namespace: str) -> dict[str, Any] | None:
    """One namespaced object as the API server's JSON (no model round trip); None on 404.
    Other API errors propagate, so pollers can record them and go on."""
    try:
        response = call(name, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    result: dict[str, Any] = json.loads(response.data)
    return result


@dataclass(frozen=True)
class LiveState:
    """A WebApp's live Deployment and Service as API JSON (camelCase dicts); None when absent."""

    deployment: dict[str, Any] | None
    service: dict[str, Any] | None


def read_live(api: client.ApiClient, namespace: str, name: str) -> LiveState:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    try:
        return LiveState(
            deployment=read_object(apps.read_namespaced_deployment, name, namespace),
            service=read_object(core.read_namespaced_service, name, namespace),
        )
    except client.ApiException as exc:
        raise CompareError(f"reading {namespace}/{name} failed: {exc.status} {exc.reason}") from exc


def current_problems(api: client.ApiClient, namespace: str, desired: DesiredObjects) -> list[str]:
    """What keeps the desired state from holding right now (empty: it holds)."""
    try:
        return problems(desired, read(api, namespace, desired.kinds))
    except client.ApiException as exc:
        raise CompareError(
            f"reading namespace {namespace} failed: {exc.status} {exc.reason}"
        ) from exc


def wait_for_desired_state(
    api: client.ApiClient,
    namespace: str,
    desired: DesiredObjects,
    *,
    timeout: float,
    started: float | None = None,
    what: str = "WebApp",
    cancel: threading.Event | None = None,
) -> None:
    """Block until the desired state holds (rollout complete), or raise a one-line error
    naming the first thing that still differs. Watches; a cancel event cuts it short.
    `timeout` counts from `started` (default now; the error names the whole budget), with a
    last look of at least a second when it is nearly spent."""
    name = desired.deployment.name if desired.deployment is not None else namespace
    left = Deadline(timeout, started=started).remaining(1.0)
    try:
        found = wait_until_holds(api, namespace, desired, timeout=left, cancel=cancel)
    except InterruptedError:
        raise WaitCancelled(f"{what} {namespace}/{name}: cancelled") from None
    except client.ApiException as exc:
        raise CompareError(
            f"reading namespace {namespace} failed: {exc.status} {exc.reason}"
        ) from exc
    if found:
        # Every difference (a few at most): a diagnosis, not just the first symptom.
        shown = "; ".join(found[:SHOWN])
        more = f" (+{len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        raise CompareError(
            f"{what} {namespace}/{name} did not reach its desired state within "
            f"{timeout:.0f}s: {shown}{more}",
            exit_code=1,
        )
