"""The object kinds the judge reads, watches and defaults, and their typed API calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kubernetes import client

# Every API call of the judge has a request timeout: (connect, read) seconds. A cluster that
# stops answering turns into an error within this bound, never into a hang or a verdict.
REQUEST_TIMEOUT = (3.0, 10.0)


@dataclass(frozen=True)
class Kind:
    kind: str
    api: Callable[[client.ApiClient], Any]
    plural: str  # the method suffix: list_namespaced_<plural>, create_namespaced_<plural>

    def call(self, api: client.ApiClient, verb: str) -> Callable[..., Any]:
        """The typed client's `<verb>_namespaced_<plural>` (read, list, create, patch, ...)."""
        return getattr(self.api(api), f"{verb}_namespaced_{self.plural}")

    def list_call(self, api: client.ApiClient) -> Callable[..., Any]:
        return self.call(api, "list")

    def create_call(self, api: client.ApiClient) -> Callable[..., Any]:
        return self.call(api, "create")


KINDS: dict[str, Kind] = {
    k.kind: k
    for k in (
        Kind("Deployment", client.AppsV1Api, "deployment"),
        Kind("ReplicaSet", client.AppsV1Api, "replica_set"),
        Kind("StatefulSet", client.AppsV1Api, "stateful_set"),
        Kind("DaemonSet", client.AppsV1Api, "daemon_set"),
        Kind("Service", client.CoreV1Api, "service"),
        Kind("Pod", client.CoreV1Api, "pod"),
        Kind("ConfigMap", client.CoreV1Api, "config_map"),
        Kind("ServiceAccount", client.CoreV1Api, "service_account"),
    )
}
# What a trial watches: the workload, its Service, and what the rollout rule reads.
WATCHED = ("Deployment", "Service", "ReplicaSet", "Pod")


def kind(name: str) -> Kind:
    try:
        return KINDS[name]
    except KeyError:
        known = ", ".join(sorted(KINDS))
        raise ValueError(f"kind {name!r} is not judged yet (known: {known})") from None
