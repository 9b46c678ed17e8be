"""Whether two trials of an app can share the cluster, read from its rendered manifest.

A run deploys the app once per trial, each in its own namespace under a release name of its
own, and runs trials side by side. Some apps cannot be deployed twice at once, whatever the
toolkit does: their pods claim something of the *node* (a host port, the host network: two
releases' pods compete for the same port on the same nodes, and the second stays Pending), or
they create cluster-wide objects whose names do not depend on the release or its namespace
(a second install fails: the object belongs to the first release). Contention the toolkit
itself would cause must never show as an `error` of the app, so such an app's trials run one
at a time, and the run says why.

The check is general: the manifest is rendered for two trial namespaces (and their release
names) and compared - an object that comes out with the same cluster-wide identity in both is
fixed - and every pod template is read for host ports and the host network.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from compare.judge.kinds import KINDS, pod_template


def _name(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind')} {(obj.get('metadata') or {}).get('name')}"


def node_claims(objects: Iterable[Mapping[str, Any]]) -> list[str]:
    """What the pods of `objects` claim on their node: host ports, the host network."""
    found = []
    for obj in objects:
        spec = (pod_template(obj) or {}).get("spec") or {}
        if not isinstance(spec, Mapping):
            continue
        if spec.get("hostNetwork"):
            found.append(f"{_name(obj)}: its pods use the host network")
        ports = sorted(
            {
                int(port["hostPort"])
                for container in [
                    *(spec.get("initContainers") or []),
                    *(spec.get("containers") or []),
                ]
                for port in (container.get("ports") or [])
                if isinstance(port, Mapping) and port.get("hostPort")
            }
        )
        if ports:
            found.append(f"{_name(obj)}: host port {', '.join(map(str, ports))}")
    return found


def _scopes(crds: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], bool]:
    """(group, kind) -> namespaced, of the custom resources these CRDs define."""
    found = {}
    for crd in crds:
        if crd.get("kind") != "CustomResourceDefinition":
            continue
        spec = crd.get("spec") or {}
        names = spec.get("names") or {}
        found[(str(spec.get("group")), str(names.get("kind")))] = spec.get("scope") != "Cluster"
    return found


def _identity(
    obj: Mapping[str, Any], scopes: Mapping[tuple[str, str], bool]
) -> tuple[str, str, str] | None:
    """Where the object lives cluster-wide, if that does not follow the trial's namespace:
    (kind, namespace or '', name) for a cluster-scoped kind or an explicit namespace."""
    meta = obj.get("metadata") or {}
    kind = str(obj.get("kind"))
    known = KINDS.get(kind)
    group = str(obj.get("apiVersion") or "").rpartition("/")[0]
    # The table's kinds, the chart's own custom resources (their CRDs say their scope); a kind
    # neither knows (an APIService) is taken as cluster-wide: two trials never compete for one
    # object then, at worst they run one at a time.
    namespaced = known.namespaced if known is not None else scopes.get((group, kind), False)
    if not namespaced:
        return (kind, "", str(meta.get("name")))
    if meta.get("namespace"):
        return (kind, str(meta.get("namespace")), str(meta.get("name")))
    return None


def fixed_names(
    first: Iterable[Mapping[str, Any]],
    second: Iterable[Mapping[str, Any]],
    scopes: Mapping[tuple[str, str], bool] | None = None,
) -> list[str]:
    """Objects that two renderings for two trial namespaces give the same cluster-wide
    identity (a cluster-scoped object, or one in a fixed namespace, with a fixed name);
    `scopes`: the scope of custom resources' kinds (`_scopes`)."""
    scopes = scopes or {}
    seen = {ident for obj in first if (ident := _identity(obj, scopes)) is not None}
    found = []
    for obj in second:
        ident = _identity(obj, scopes)
        if ident is not None and ident in seen:
            where = f" in namespace {ident[1]}" if ident[1] else ""
            found.append(f"{ident[0]} {ident[2]}{where}: a fixed name")
    return found


def cannot_share(
    first: Sequence[Mapping[str, Any]],
    second: Sequence[Mapping[str, Any]],
    crds: Sequence[Mapping[str, Any]] = (),
) -> list[str]:
    """Why two trials of the app cannot run side by side (empty: they can), from its manifest
    rendered for two trial namespaces; `crds`: the chart's crds/ (with those it renders, they
    say whether its custom resources are namespaced)."""
    scopes = _scopes([*crds, *first])
    return list(dict.fromkeys([*node_claims(first), *fixed_names(first, second, scopes)]))
