"""The operator's connection to the API server: one configuration for its own client and kopf.

Out of a cluster the operator reads a kubeconfig (the local runner writes one holding the
ServiceAccount token, so it runs with exactly the RBAC of config/rbac); in a cluster it uses
the pod's ServiceAccount. kopf gets the same credentials through `connection_info`.
"""

from __future__ import annotations

import os

import kopf
from kubernetes import client, config

__all__ = ["api_client", "connection_info", "load_configuration"]

IN_CLUSTER_ENV = "KUBERNETES_SERVICE_HOST"


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
