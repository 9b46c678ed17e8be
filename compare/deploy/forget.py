"""What a cluster that is going away leaves on this machine, dropped in one call: its local
operator, Flux and Argo CD processes (Redis included), their tokens, certificates, chart
repositories, caches and logs.

Used by `compare cluster down`, the test session and the benchmarks, so that no process or
credential outlives its cluster. (State left by a cluster deleted some other way is found stale
and dropped when the next cluster of that name starts the processes again.)
"""

from __future__ import annotations

from compare.cluster import ClusterTarget
from compare.deploy.argocd_process import forget_argocd
from compare.deploy.flux import forget_flux
from compare.deploy.operator import forget_operator


def forget_cluster(cluster: ClusterTarget) -> None:
    forget_operator(cluster)
    forget_flux(cluster)
    forget_argocd(cluster)
