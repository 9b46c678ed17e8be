"""The operator's connection to the API server: one configuration for its own client and kopf.

Out of a cluster the operator reads a kubeconfig (the local runner writes one holding the
ServiceAccount token, so it runs with exactly the RBAC of config/rbac); in a cluster it uses
the pod's ServiceAccount. kopf gets the same credentials through `connection_info`, in an
HTTP session of our own (`kopf_session`) whose connections are bounded.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import aiohttp
import kopf
from kubernetes import client, config

__all__ = [
    "api_client",
    "connection_info",
    "kopf_connection_limit",
    "kopf_session",
    "load_configuration",
]

IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"

# kopf's watch streams each hold a connection for as long as they run: one per watched
# resource (WebApps, Deployments, Services, pods) and namespace, plus its
# observers of CRDs and namespaces. Its requests (finalizers, events) share what is left.
WATCHED_RESOURCES = 4
KOPF_OBSERVERS = 2
KOPF_REQUEST_CONNECTIONS = 32
_GLOB = frozenset("*?[")


def load_configuration(kubeconfig: str | None, context: str | None = None) -> client.Configuration:
    """The kubeconfig when given, else the in-cluster ServiceAccount, else $KUBECONFIG."""
    configuration = client.Configuration()
    if kubeconfig is None and os.environ.get(IN_CLUSTER_ENV):
        config.load_incluster_config(client_configuration=configuration)
    else:
        config.load_kube_config(
            config_file=kubeconfig, context=context, client_configuration=configuration
        )
    return configuration


def api_client(configuration: client.Configuration, *, pool_size: int = 32) -> client.ApiClient:
    """A client safe to share between the reconcile threads (urllib3 pools are thread-safe)."""
    configuration.connection_pool_maxsize = pool_size
    return client.ApiClient(configuration)


def connection_info(configuration: client.Configuration) -> kopf.ConnectionInfo:
    """The same credentials, in the shape kopf's login handler returns."""
    header = configuration.get_api_key_with_prefix(
        "BearerToken"
    ) or configuration.get_api_key_with_prefix("authorization")
    parts = header.split(" ", 1) if header else []
    scheme, token = (parts[0], parts[1]) if len(parts) == 2 else (None, parts[0] if parts else None)
    return kopf.ConnectionInfo(
        server=configuration.host,
        ca_path=configuration.ssl_ca_cert,
        insecure=not configuration.verify_ssl,
        scheme=scheme,
        token=token,
        certificate_path=configuration.cert_file,
        private_key_path=configuration.key_file,
    )


def kopf_connection_limit(namespaces: Sequence[str]) -> int:
    """How many connections kopf may hold at once; 0 (unbounded) when a namespace pattern
    makes the number of watch streams unknown in advance.

    kopf's own session has no bound: in a burst of a thousand WebApps it opened 338
    connections to the API server within four seconds (a finalizer patch for each new WebApp,
    all in flight while the API server waited on the admission webhook this very event loop
    serves), each TLS connection with its buffers (asyncio's alone is 256 KiB): RSS went from
    65 to 182 MiB and stayed there until they went idle. Bounded, the requests wait their
    turn for a connection instead. 32 for the requests: with 16 the same burst's children
    took 65 s instead of 55 (the finalizer patches queued), with 32 45 s, RSS peak 135 MiB.
    """
    if any(_GLOB & set(pattern) for pattern in namespaces):
        return 0
    streams = WATCHED_RESOURCES * max(1, len(namespaces)) + KOPF_OBSERVERS
    return streams + KOPF_REQUEST_CONNECTIONS


def kopf_session(info: kopf.ConnectionInfo, limit: int) -> kopf.AiohttpSession:
    """kopf's HTTP session for `info`'s credentials, with at most `limit` connections (0: no
    bound). Built in the event loop (aiohttp binds a session to the running loop); kopf
    closes it when it logs in again or stops."""
    session = aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(limit=limit, ssl=info.as_ssl_context()),
        headers=info.as_http_headers(),
    )
    return kopf.AiohttpSession(
        server=info.server, default_namespace=info.default_namespace, aiohttp_session=session
    )
