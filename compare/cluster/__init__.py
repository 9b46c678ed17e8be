"""Clusters: the embedded kwok control plane and the target every command runs against.

`binaries` builds and finds the Go-built executables, `embedded` drives kwokctl, `target`
resolves `--kubeconfig/--context` (or the embedded default) into a reachable API client,
`identity` names a cluster for the state kept beside it (`cluster_key`, `state_dir`), `ports`
hands out free ports for local listeners, never twice across the toolkit's processes.
Nothing here knows about WebApps.

Each name is imported from its module on first use (PEP 562): the embedded cluster's
commands need no kubernetes client, which `target` imports (~0.2 s).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compare.lazy import lazy_names

if TYPE_CHECKING:
    from compare.cluster.binaries import ensure_binaries, tool_path
    from compare.cluster.embedded import EmbeddedCluster
    from compare.cluster.identity import cluster_key, is_local, state_dir
    from compare.cluster.target import ClusterTarget, new_api_client, resolve_target

# Where each name lives (imported on first use).
_WHERE = {
    "ensure_binaries": "binaries",
    "tool_path": "binaries",
    "EmbeddedCluster": "embedded",
    "cluster_key": "identity",
    "is_local": "identity",
    "state_dir": "identity",
    "ClusterTarget": "target",
    "new_api_client": "target",
    "resolve_target": "target",
}

__all__ = [
    "ClusterTarget",
    "EmbeddedCluster",
    "cluster_key",
    "ensure_binaries",
    "is_local",
    "new_api_client",
    "resolve_target",
    "state_dir",
    "tool_path",
]


__getattr__ = lazy_names(__name__, _WHERE)
