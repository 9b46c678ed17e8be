"""How the extension's activities reach the cluster: the same way chaostoolkit-kubernetes does.

chaosk8s reads the kubeconfig path from the `KUBECONFIG` environment variable and the context
from `KUBERNETES_CONTEXT` (in the activity's secrets or the environment). Our activities read
the same two, so chaosk8s's and ours always act on one cluster. `pointed_at` sets them for an
in-process run (`compare run`).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from kubernetes import client
from kubernetes.config import kube_config

from compare.cluster import ClusterTarget, new_api_client
from compare.deploy.operator_install import is_local

ENV_KUBECONFIG = "KUBECONFIG"
ENV_CONTEXT = "KUBERNETES_CONTEXT"


def kubeconfig_path() -> Path:
    first = os.environ.get(ENV_KUBECONFIG, "").split(os.pathsep)[0]
    return Path(first).expanduser() if first else Path.home() / ".kube" / "config"


def kube_context(secrets: Mapping[str, Any] | None = None) -> str | None:
    value = (secrets or {}).get(ENV_CONTEXT) or os.environ.get(ENV_CONTEXT)
    return str(value) if value else None


def cluster_target(secrets: Mapping[str, Any] | None = None) -> ClusterTarget:
    """The target the environment names, as `compare` names it (see `recognised`)."""
    return recognised(ClusterTarget(kubeconfig_path(), kube_context(secrets)))


def recognised(cluster: ClusterTarget) -> ClusterTarget:
    """Mark a kubeconfig of an embedded cluster as embedded, however it was given
    (`--kubeconfig <its kubeconfig>`, KUBECONFIG in a `chaos run`)."""
    if cluster.embedded or not is_local(cluster):
        return cluster
    return ClusterTarget(cluster.kubeconfig, cluster.context, embedded=True)


def api_client(secrets: Mapping[str, Any] | None = None) -> client.ApiClient:
    """A client of its own (no global default configuration is touched)."""
    return new_api_client(kubeconfig_path(), kube_context(secrets))


@contextmanager
def pointed_at(cluster: ClusterTarget) -> Iterator[None]:
    """Point chaosk8s and this extension at `target` while the block runs.

    The kubernetes client reads `KUBECONFIG` once, when it is imported, into the default path
    `load_kube_config` uses (chaosk8s calls it without a path); setting the variable later is
    not enough, so that default is set too. Both are process-wide: one run, one cluster.
    """
    saved = {key: os.environ.get(key) for key in (ENV_KUBECONFIG, ENV_CONTEXT)}
    saved_default = kube_config.KUBE_CONFIG_DEFAULT_LOCATION
    os.environ[ENV_KUBECONFIG] = str(cluster.kubeconfig)
    if cluster.context:
        os.environ[ENV_CONTEXT] = cluster.context
    else:
        os.environ.pop(ENV_CONTEXT, None)
    kube_config.KUBE_CONFIG_DEFAULT_LOCATION = str(cluster.kubeconfig)
    try:
        yield
    finally:
        kube_config.KUBE_CONFIG_DEFAULT_LOCATION = saved_default
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
