"""The registry ConfigMap: one entry per WebApp the operator serves.

Reconcile records `<namespace>.<name>: <uid>`; the finalizer's cleanup removes the entry before
the WebApp may go. It is the observable side of the finalizer (`kubectl get configmap
webapp-operator-registry -n webapp-system`), and the inventory a platform team would read.
Entries are merge-patched one key at a time, so reconciles of different WebApps never conflict.
"""

from __future__ import annotations

import json
import threading

from kubernetes import client

from webapp_operator.names import FIELD_MANAGER

__all__ = ["Registry", "registry_key"]


def registry_key(namespace: str, name: str) -> str:
    """ConfigMap keys allow [-._a-zA-Z0-9]; namespaces and names never contain a dot."""
    return f"{namespace}.{name}"


class Registry:
    """The ConfigMap, with an in-memory copy so an unchanged entry costs no API call."""

    def __init__(self, api: client.ApiClient, namespace: str, name: str) -> None:
        self._core = client.CoreV1Api(api)
        self.namespace = namespace
        self.name = name
        self._lock = threading.Lock()
        self._data: dict[str, str] | None = None
        # UIDs whose entry the cleanup removed: a reconcile that read the WebApp just before
        # its deletion began must not record it again after the cleanup.
        self._removed: set[str] = set()

    def _load(self) -> dict[str, str]:
        if self._data is None:
            try:
                raw = self._core.read_namespaced_config_map(
                    self.name, self.namespace, _preload_content=False
                )
                self._data = dict(json.loads(raw.data).get("data") or {})
            except client.ApiException as exc:
                if exc.status != 404:
                    raise
                self._create()
                self._data = {}
        return self._data

    def _create(self) -> None:
        body = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "data": {},
        }
        try:
            self._core.create_namespaced_config_map(
                self.namespace, body, field_manager=FIELD_MANAGER
            )
        except client.ApiException as exc:
            if exc.status != 409:  # another replica created it first
                raise

    def _patch(self, key: str, value: str | None) -> None:
        raw = self._core.patch_namespaced_config_map(
            self.name,
            self.namespace,
            {"data": {key: value}},
            field_manager=FIELD_MANAGER,
            _content_type="application/merge-patch+json",
            _preload_content=False,
        )
        self._data = dict(json.loads(raw.data).get("data") or {})

    def record(self, namespace: str, name: str, uid: str) -> bool:
        """Register a WebApp; True when the ConfigMap was written."""
        key = registry_key(namespace, name)
        with self._lock:
            if uid in self._removed or self._load().get(key) == uid:
                return False
            self._patch(key, uid)
            return True

    def remove(self, namespace: str, name: str, uid: str) -> bool:
        """Forget a WebApp; True when an entry was removed."""
        key = registry_key(namespace, name)
        with self._lock:
            self._removed.add(uid)
            # Read fresh: the cleanup must not trust a copy another replica may have outdated.
            self._data = None
            if key not in self._load():
                return False
            self._patch(key, None)
            return True
