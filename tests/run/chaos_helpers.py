"""Chaostoolkit activities only the verdict-rule tests use (importable by chaoslib in-process).

`keep_scaling` drifts a Deployment and keeps re-applying the drift in the background, so a
controller that reverts it flaps; `scale_and_cut` drifts it and then cuts the loopback proxy
the run reaches the cluster through, so the cluster stops answering mid-trial.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from kubernetes import client

from compare.chaos.cluster import api_client
from tests.loopback_proxy import LoopbackProxy

__all__ = ["PROXIES", "LoopbackProxy", "keep_scaling", "scale_and_cut", "scale_then_crash"]

# Loopback proxies by port, registered by the tests that run through one.
PROXIES: dict[int, LoopbackProxy] = {}


def _scale(name: str, ns: str, replicas: int, secrets: Any = None, api: Any = None) -> None:
    own = api is None
    api = api_client(secrets) if own else api
    try:
        body = {"spec": {"replicas": replicas}}
        client.AppsV1Api(api).patch_namespaced_deployment_scale(name, ns, body)
    finally:
        if own:
            api.close()


def keep_scaling(
    name: str,
    ns: str,
    replicas: int = 1,
    seconds: float = 6.0,
    interval: float = 0.4,
    secrets: Any = None,
) -> dict[str, Any]:
    """Scale to `replicas` now, and again every `interval` s for `seconds` (in a thread).

    On a fixed schedule, over one connection, and on through a failed call: a late or a lost
    re-scale would leave the healed state alone for longer than `interval`, long enough to
    settle, and the flapping this helper exists for would not be there."""
    _scale(name, ns, replicas, secrets)

    def again() -> None:
        api = api_client(secrets)
        start = time.monotonic()
        try:
            for k in range(1, int(seconds / interval) + 1):
                time.sleep(max(0.0, start + k * interval - time.monotonic()))
                try:
                    _scale(name, ns, replicas, api=api)
                except Exception:  # the trial may be over and its namespace gone: try on
                    continue
        finally:
            api.close()

    threading.Thread(target=again, daemon=True).start()
    return {"object": "deployment", "field": "deployment.spec.replicas", "value": replicas}


def scale_and_cut(name: str, ns: str, port: int, secrets: Any = None) -> dict[str, Any]:
    """Scale to 1, then make the cluster stop answering (the proxy refuses and resets)."""
    _scale(name, ns, 1, secrets)
    PROXIES[port].cut()
    return {"object": "deployment", "field": "deployment.spec.replicas", "value": 1}


def scale_then_crash(
    name: str, ns: str, component: str, after: float, secrets: Any = None
) -> dict[str, Any]:
    """Scale to 1, then `after` seconds later stop a component of the embedded cluster (in a
    thread): an outage the experiment does not own, late in the heal window."""
    from compare.chaos.control_plane import embedded_cluster

    cluster = embedded_cluster(secrets)
    _scale(name, ns, 1, secrets)

    def crash() -> None:
        time.sleep(after)
        cluster.stop_component(component)

    threading.Thread(target=crash, daemon=True).start()
    return {"object": "deployment", "field": "deployment.spec.replicas", "value": 1}
