"""Which cluster a target is, for the state the toolkit keeps beside it on this machine.

Every approach's local processes (the operator, Flux's and Argo CD's controllers), the run's
fault cluster and the control-plane faults find their cluster's state by `cluster_key`: the
embedded cluster's name, else a hash of the kubeconfig path and context, so two ways of naming
one cluster share one state directory (`state_dir`).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from compare.cluster.target import ClusterTarget
from compare.paths import cache_dir

__all__ = ["cluster_key", "is_local", "state_dir"]


def is_local(cluster: ClusterTarget) -> bool:
    """The embedded cluster, however it was named (`--kubeconfig` pointing at its kubeconfig
    included): its API server runs on loopback and can call a webhook on 127.0.0.1."""
    embedded_root = (cache_dir() / "kwok" / "clusters").resolve()
    return cluster.embedded or cluster.kubeconfig.resolve().parent.parent == embedded_root


def cluster_key(cluster: ClusterTarget) -> str:
    """A directory name per cluster: the embedded cluster's name, else a hash of the
    kubeconfig path and context. Two ways of naming one cluster share one state."""
    if is_local(cluster) and cluster.context is None:
        return cluster.kubeconfig.resolve().parent.name
    digest = hashlib.sha256(f"{cluster.kubeconfig.resolve()}|{cluster.context}".encode())
    return f"ext-{digest.hexdigest()[:12]}"


def state_dir(cluster: ClusterTarget, area: str) -> Path:
    """Where `area` (a path under the cache: "operator", "flux/clusters") keeps the state of
    this cluster's local processes: pids, logs, tokens, certificates."""
    return cache_dir() / area / cluster_key(cluster)
