"""Clusters: the embedded kwok control plane and the target every command runs against.

`binaries` builds and finds the Go-built executables, `embedded` drives kwokctl, `target`
resolves `--kubeconfig/--context` (or the embedded default) into a reachable API client.
Nothing here knows about WebApps.
"""

from compare.cluster.binaries import ensure_binaries, tool_path
from compare.cluster.embedded import ClusterStatus, EmbeddedCluster
from compare.cluster.target import ClusterTarget, new_api_client, resolve_target

__all__ = [
    "ClusterStatus",
    "ClusterTarget",
    "EmbeddedCluster",
    "ensure_binaries",
    "new_api_client",
    "resolve_target",
    "tool_path",
]
