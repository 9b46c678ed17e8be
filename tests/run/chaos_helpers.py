"""Chaostoolkit activities only the verdict-rule tests use (importable by chaoslib in-process).

`keep_scaling` drifts a Deployment and keeps re-applying the drift in the background, so a
controller that reverts it flaps; `scale_and_cut` drifts it and then cuts the loopback proxy
the run reaches the cluster through, so the cluster stops answering mid-trial.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any

from kubernetes import client

from compare.chaos.cluster import api_client

# Loopback proxies by port, registered by the tests that run through one.
PROXIES: dict[int, LoopbackProxy] = {}


def _scale(name: str, ns: str, replicas: int, secrets: Any = None) -> None:
    api = api_client(secrets)
    try:
        body = {"spec": {"replicas": replicas}}
        client.AppsV1Api(api).patch_namespaced_deployment_scale(name, ns, body)
    finally:
        api.close()


def keep_scaling(
    name: str,
    ns: str,
    replicas: int = 1,
    seconds: float = 6.0,
    interval: float = 0.4,
    secrets: Any = None,
) -> dict[str, Any]:
    """Scale to `replicas` now, and again every `interval` s for `seconds` (in a thread)."""
    _scale(name, ns, replicas, secrets)

    def again() -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            time.sleep(interval)
            try:
                _scale(name, ns, replicas, secrets)
            except Exception:
                return

    threading.Thread(target=again, daemon=True).start()
    return {"object": "deployment", "field": "deployment.spec.replicas", "value": replicas}


def scale_and_cut(name: str, ns: str, port: int, secrets: Any = None) -> dict[str, Any]:
    """Scale to 1, then make the cluster stop answering (the proxy refuses and resets)."""
    _scale(name, ns, 1, secrets)
    PROXIES[port].cut()
    return {"object": "deployment", "field": "deployment.spec.replicas", "value": 1}


class LoopbackProxy:
    """A TCP proxy on 127.0.0.1 to `upstream`; `cut()` closes it and every connection."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._lock = threading.Lock()
        self._cut = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._cut.is_set():
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.upstream, timeout=3)
            except OSError:
                downstream.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                if self._cut.is_set():
                    downstream.close()
                    upstream.close()
                    return
                self._sockets += [downstream, upstream]
            for a, b in ((downstream, upstream), (upstream, downstream)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        try:
            while chunk := source.recv(65536):
                sink.sendall(chunk)
        except OSError:
            pass
        finally:
            for s in (source, sink):
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        self._cut.set()
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                with contextlib.suppress(OSError):
                    s.shutdown(socket.SHUT_RDWR)
                s.close()
