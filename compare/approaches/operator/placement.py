"""Where a kustomize install's objects go, as `kubectl apply -k` puts them, and back out.

A kustomization (a kubebuilder or operator-sdk `config/default`) usually fixes its own
namespace (`webapp-system`), which is not the namespace a run installs into. So each object is
placed by its own metadata: a namespaced object keeps its `metadata.namespace`, one without it
goes to the install's namespace, a cluster-scoped one gets none (the API server's discovery
says which is which). The Namespaces the kustomization creates are applied first and its CRDs
next (established before anything of their kinds); removal runs in the reverse order, so the
namespaces go last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.install import apply_crds, apply_documents
from compare.errors import CompareError
from compare.kube import served

__all__ = ["Key", "apply_ordered", "key", "ordered", "present"]

# Applied in this order, the rest after them in the kustomization's own order.
_FIRST = ("Namespace", "CustomResourceDefinition")

# kind, namespace (None: cluster-scoped), name.
Key = tuple[str, str | None, str]


def ordered(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces, then CRDs, then everything else (each group in its given order)."""

    def rank(doc: Mapping[str, Any]) -> int:
        kind = doc.get("kind")
        return _FIRST.index(kind) if kind in _FIRST else len(_FIRST)

    return sorted(docs, key=rank)  # stable: the kustomization's order within a group


def key(what: served.Served | None, doc: Mapping[str, Any], namespace: str) -> Key:
    """Where the object lives: its own namespace, else the install's when its kind is
    namespaced (a kind not served yet - one of the install's CRDs - is taken as namespaced)."""
    meta = doc.get("metadata") or {}
    namespaced = what.namespaced if what is not None else True
    where = (meta.get("namespace") or namespace) if namespaced else None
    return (str(doc.get("kind")), where, str(meta.get("name")))


def present(
    cluster: ClusterTarget, docs: Sequence[Mapping[str, Any]], namespace: str
) -> list[bool]:
    """For each document, whether its object exists already, each read in its own place (a
    kind no API serves yet exists nowhere)."""
    found = []
    with cluster.api_client() as api:
        kinds: dict[tuple[str, str], served.Served | None] = {}
        for doc in docs:
            pair = (str(doc["apiVersion"]), str(doc["kind"]))
            if pair not in kinds:
                kinds[pair] = served.served(api, *pair)
            what = kinds[pair]
            _, where, name = key(what, doc, namespace)
            found.append(what is not None and _read(api, what, where, name) is not None)
    return found


def _read(api: client.ApiClient, what: served.Served, where: str | None, name: str) -> Any:
    try:
        return served.read(api, what, where, name)  # None: absent (404)
    except client.ApiException as exc:
        shown = f"{where}/{name}" if where else name
        raise CompareError(f"reading {what.kind} {shown}: {served.api_message(exc)}") from None


def apply_ordered(
    cluster: ClusterTarget, docs: Sequence[dict[str, Any]], *, field_manager: str, namespace: str
) -> None:
    """Server-side apply in `ordered` order: the Namespaces, then the CRDs (waited for until
    established, so that objects of their kinds can follow: `apply_crds`), then the rest, each
    object in its own place (`served.apply_all`)."""
    docs = ordered(docs)
    namespaces = [doc for doc in docs if doc.get("kind") == "Namespace"]
    crds = [doc for doc in docs if doc.get("kind") == "CustomResourceDefinition"]
    rest = [doc for doc in docs if doc.get("kind") not in _FIRST]
    if namespaces:
        apply_documents(cluster, namespaces, field_manager=field_manager, namespace=namespace)
    if crds:
        apply_crds(cluster, crds, field_manager=field_manager)
    apply_documents(cluster, rest, field_manager=field_manager, namespace=namespace)
