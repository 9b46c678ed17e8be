"""An operator installed into the cluster (`kustomize:` or `chart:`) runs its manager in pods;
on the embedded cluster pods run no code (kwok only marks them Running), so such an operator
never reconciles anything. Told before anything is applied, in one line saying what to use
instead, rather than after a full deploy timeout.

"The embedded cluster" is the toolkit's own, however it was named (`compare.cluster.is_local`:
the default, or `--kubeconfig` pointing at its kubeconfig); any other cluster runs pods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compare.cluster import ClusterTarget, is_local
from compare.errors import CompareError
from compare.judge.kinds import POD_MAKERS
from compare.target import Operator, Target

__all__ = ["POD_KINDS", "check_runs_here", "pod_workloads"]

# The kinds whose objects make pods (the judge's table of kinds), and a Pod itself: they run
# code only where pods do.
POD_KINDS = frozenset({*POD_MAKERS, "Pod"})
# At most this many are named in the line.
SHOWN = 3


def _runs_pods(doc: Mapping[str, Any]) -> bool:
    if doc.get("kind") not in POD_KINDS:
        return False
    # A workload scaled to zero runs nothing; one without `replicas` gets the default, 1.
    replicas = (doc.get("spec") or {}).get("replicas")
    return not (isinstance(replicas, int) and replicas == 0)


def pod_workloads(docs: Sequence[Mapping[str, Any]]) -> list[str]:
    """The install's objects that run pods, as `Deployment ns/name` (`name` without one)."""
    found = []
    for doc in docs:
        if _runs_pods(doc):
            meta = doc.get("metadata") or {}
            where = f"{meta['namespace']}/" if meta.get("namespace") else ""
            found.append(f"{doc.get('kind')} {where}{meta.get('name')}")
    return found


def check_runs_here(
    cluster: ClusterTarget, target: Target, operator: Operator, docs: Sequence[Mapping[str, Any]]
) -> None:
    """Refuse (one line, exit 2) an install whose rendered objects run pods, on the embedded
    cluster: the operator would never reconcile there."""
    form = operator.install.form
    if form not in ("kustomize", "chart") or not is_local(cluster):
        return
    workloads = pod_workloads(docs)
    if not workloads:
        return  # CRDs, RBAC and the like only: nothing of it needs to run
    named = ", ".join(workloads[:SHOWN])
    if len(workloads) > SHOWN:
        named += f" and {len(workloads) - SHOWN} more"
    raise CompareError(
        f"{target.source}: operator.install.{form}: the operator ({named}) runs its manager in"
        " pods, and pods run no code on the embedded cluster: use operator.install.process (run"
        " it as a local command) or a real cluster through --kubeconfig"
    )
