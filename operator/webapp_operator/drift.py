"""Pure drift detection and correction for the two children of a WebApp.

`owned_differences` lists every field the operator sets whose live value differs; server-side
apply (force) restores those. But apply never removes what another field manager added, so
the collections the operator owns whole (pod-template labels, containers, volumes, the
WebApp container's env/envFrom/ports/volumeMounts, the Service's ports and selector) are
checked by `foreign_additions`, and `correction_patch` rewrites exactly the affected
collections in one JSON patch guarded by a `test` of the live value: if the object changed in
between, the patch fails instead of removing the wrong entry.

Items are matched by the API server's own merge keys (containerPort for container ports, port
for Service ports), so an edited port number is a foreign entry, not a renamed one.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from kubernetes.utils import parse_quantity

__all__ = ["Foreign", "correction_patch", "foreign_additions", "owned_differences"]

# Keys that identify list items when comparing owned fields item by item.
_LIST_KEYS = ("name", "containerPort", "mountPath")
# The container fields owned whole, with the merge key of their items (None: whole items).
_CONTAINER_CLOSED: dict[str, str | None] = {
    "env": "name",
    "envFrom": None,
    "ports": "containerPort",
    "volumeMounts": "mountPath",
}


@dataclass(frozen=True)
class Foreign:
    """One entry someone else added to a collection the operator owns whole."""

    field: str  # readable path, e.g. spec.template.spec.containers[sidecar]
    value: Any


# -- owned fields ----------------------------------------------------------------------------


def owned_differences(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[str]:
    """Paths of every field set in `desired` whose live value differs (absent counts).

    Only what the operator sets is compared, so defaults the API server adds are not drift.
    Quantities compare by value (`0.5` equals `500m`); keyed lists item by item, in order.
    """
    out: list[str] = []
    for key in ("metadata", "spec"):
        if key in desired:
            _diff(desired[key], live.get(key), key, out)
    return out


def _diff(desired: Any, live: Any, path: str, out: list[str]) -> None:
    if isinstance(desired, Mapping):
        if not isinstance(live, Mapping):
            out.append(path)
            return
        for key, value in desired.items():
            sub = f"{path}.{key}"
            if key not in live:
                if not _omitted_by_server(value):
                    out.append(sub)
                continue
            _diff(value, live[key], sub, out)
    elif isinstance(desired, list):
        _diff_list(desired, live, path, out)
    elif _is_quantity_path(path):
        if _quantity(desired) != _quantity(live):
            out.append(path)
    elif desired != live:
        out.append(path)


def _diff_list(desired: list[Any], live: Any, path: str, out: list[str]) -> None:
    if not isinstance(live, list):
        out.append(path)
        return
    key = _list_key(desired)
    if key is None:
        if desired != live:
            out.append(path)
        return
    positions = []
    for item in desired:
        ident = item[key]
        index = next((i for i, other in enumerate(live) if _ident(other, key) == ident), None)
        if index is None:
            out.append(f"{path}[{ident}]")
            continue
        positions.append(index)
        _diff(item, live[index], f"{path}[{ident}]", out)
    if positions != sorted(positions):
        out.append(f"{path}(order)")


def _list_key(items: Sequence[Any]) -> str | None:
    if not items or not all(isinstance(item, Mapping) for item in items):
        return None
    return next((key for key in _LIST_KEYS if all(key in item for item in items)), None)


def _ident(item: Any, key: str) -> Any:
    return item.get(key) if isinstance(item, Mapping) else None


def _omitted_by_server(value: Any) -> bool:
    """Zero values of non-pointer Go fields never read back; booleans always do."""
    return not isinstance(value, bool) and value in (0, "", [])


def _is_quantity_path(path: str) -> bool:
    return ".resources.requests." in path or ".resources.limits." in path


def _quantity(value: Any) -> Decimal | None:
    try:
        return Decimal(parse_quantity(value))
    except (ValueError, TypeError, InvalidOperation):
        return None


# -- foreign additions -----------------------------------------------------------------------


def foreign_additions(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[Foreign]:
    """Entries added by others to the collections the operator owns whole.

    Annotations stay open on purpose: `kubectl rollout restart` writes one.
    """
    kind = desired.get("kind")
    if kind == "Deployment":
        return [
            entry for _, _, entries in _deployment_collections(desired, live) for entry in entries
        ]
    if kind == "Service":
        return [entry for _, _, entries in _service_collections(desired, live) for entry in entries]
    raise ValueError(f"no drift rules for kind {kind!r}")


def correction_patch(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A JSON patch that rewrites each closed collection holding foreign entries to its desired
    content (keeping the server's defaults inside the kept items), guarded by a `test` of the
    live parent. Empty when there is nothing foreign."""
    kind = desired.get("kind")
    if kind == "Deployment":
        parts, guard = _deployment_collections(desired, live), "/spec/template"
        guarded = (live.get("spec") or {}).get("template")
    elif kind == "Service":
        parts, guard = _service_collections(desired, live), "/spec"
        guarded = live.get("spec")
    else:
        raise ValueError(f"no drift rules for kind {kind!r}")
    ops: list[dict[str, Any]] = []
    for pointer, new_value, entries in parts:
        if not entries:
            continue
        if new_value is None:
            ops.append({"op": "remove", "path": pointer})
        else:
            ops.append({"op": "replace", "path": pointer, "value": new_value})
    if not ops:
        return []
    return [{"op": "test", "path": guard, "value": guarded}, *ops]


# One closed collection: its JSON pointer, its corrected value (None: remove it), the foreign
# entries found in it.
_Part = tuple[str, Any, list[Foreign]]


def _deployment_collections(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[_Part]:
    want_t = desired["spec"]["template"]
    live_t = (live.get("spec") or {}).get("template") or {}
    want_pod, live_pod = want_t["spec"], live_t.get("spec") or {}
    field = "spec.template.spec"

    want_labels = want_t["metadata"].get("labels") or {}
    live_labels = (live_t.get("metadata") or {}).get("labels") or {}
    labels = [
        Foreign(f"spec.template.metadata.labels[{key}]", value)
        for key, value in sorted(live_labels.items())
        if key not in want_labels
    ]

    # Containers: foreign ones, plus foreign entries inside the wanted ones.
    live_containers = live_pod.get("containers") or []
    wanted_names = {c["name"] for c in want_pod["containers"]}
    containers = _foreign_items(live_containers, wanted_names, "name", f"{field}.containers")
    for want_c in want_pod["containers"]:
        live_c = _find(live_containers, "name", want_c["name"])
        if live_c is not None:
            containers += _container_foreign(
                want_c, live_c, f"{field}.containers[{want_c['name']}]"
            )
    corrected = [
        _corrected_container(want_c, _find(live_containers, "name", want_c["name"]) or {})
        for want_c in want_pod["containers"]
    ]

    init = [
        Foreign(f"{field}.initContainers[{c.get('name')}]", c)
        for c in live_pod.get("initContainers") or []
    ]
    want_volumes = want_pod.get("volumes") or []
    volumes = _foreign_items(
        live_pod.get("volumes") or [], {v["name"] for v in want_volumes}, "name", f"{field}.volumes"
    )
    return [
        ("/spec/template/metadata/labels", dict(want_labels), labels),
        ("/spec/template/spec/containers", corrected, containers),
        ("/spec/template/spec/initContainers", None, init),
        ("/spec/template/spec/volumes", copy.deepcopy(want_volumes), volumes),
    ]


def _container_foreign(
    want: Mapping[str, Any], live: Mapping[str, Any], field: str
) -> list[Foreign]:
    found: list[Foreign] = []
    for name, key in _CONTAINER_CLOSED.items():
        items = live.get(name) or []
        wanted = want.get(name) or []
        if key is None:
            found += [
                Foreign(f"{field}.{name}[{i}]", item)
                for i, item in enumerate(items)
                if item not in wanted
            ]
        else:
            found += _foreign_items(items, {item[key] for item in wanted}, key, f"{field}.{name}")
    return found


def _corrected_container(want: Mapping[str, Any], live: Mapping[str, Any]) -> dict[str, Any]:
    """The live container with the desired fields merged in and the closed lists exactly as
    desired (absent ones removed)."""
    merged = _merge(want, live)
    for name in _CONTAINER_CLOSED:
        if name not in want:
            merged.pop(name, None)
    return merged


def _service_collections(desired: Mapping[str, Any], live: Mapping[str, Any]) -> list[_Part]:
    want, spec = desired["spec"], live.get("spec") or {}
    ports = _foreign_items(
        spec.get("ports") or [], {p["port"] for p in want["ports"]}, "port", "spec.ports"
    )
    live_selector = spec.get("selector") or {}
    selector = [
        Foreign(f"spec.selector[{key}]", value)
        for key, value in sorted(live_selector.items())
        if key not in want["selector"]
    ]
    return [
        ("/spec/ports", copy.deepcopy(want["ports"]), ports),
        ("/spec/selector", dict(want["selector"]), selector),
    ]


def _foreign_items(items: Sequence[Any], wanted: set[Any], key: str, field: str) -> list[Foreign]:
    return [
        Foreign(f"{field}[{item.get(key)}]", item)
        for item in items
        if isinstance(item, Mapping) and item.get(key) not in wanted
    ]


def _find(items: Sequence[Any], key: str, value: Any) -> Mapping[str, Any] | None:
    return next(
        (item for item in items if isinstance(item, Mapping) and item.get(key) == value), None
    )


def _merge(want: Any, live: Any) -> Any:
    """`want` over `live`: mappings merge key by key, anything else is taken from `want`."""
    if isinstance(want, Mapping) and isinstance(live, Mapping):
        out = copy.deepcopy(dict(live))
        for key, value in want.items():
            out[key] = _merge(value, live.get(key))
        return out
    return copy.deepcopy(want)
