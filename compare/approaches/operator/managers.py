"""Who wrote a target operator's baseline: fields of its owned objects that another field
manager than the operator's owns (`metadata.managedFields`), so a baseline is not silently
made of someone else's changes.

The API server records, per object, which field manager last set each field (a `kubectl
label` is `kubectl-label`, an edit `kubectl-edit`, a client's patch its `field_manager`). The
operator's own managers are not known in advance (whatever names its client uses), so they are
found from what only the operator writes:

- the owner references: a manager that owns an owned object's reference to its owner (a custom
  resource, or an object the operator made) is the operator's - it made the object;
- the custom resources' `status` subresource: the operator reports there;
- when neither names anyone (no manager kept its reference), the manager(s) of the object's
  earliest entry: whoever created it.

Kubernetes' own components (kube-controller-manager, the scheduler, the kubelet, the API
server) and any write through the `status` subresource are legitimate: they never write the
desired state. Every other manager is foreign. A field it owns that an operator's manager owns
too (both applied the same value) is the operator's; what is left is reported, per field. Only
fields the baseline keeps are: labels and annotations (a controller's annotations excepted), and
everything outside `metadata` and `status`.

The rule a baseline is held to (`verdict`): a foreign label or annotation is a warning (it is
kept as desired state, which is harmless unless the judge is to remove it); a foreign field of
the object's content (its spec, a ConfigMap's data) is a refusal: the baseline would hold the
operator to a value it never wrote, and a heal of that field could never be told from drift.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# Kubernetes' own writers: never the desired state's authors, never foreign.
from compare.results.writers import KUBERNETES_MANAGERS

# Writes through these subresources are reports, not desired state.
REPORT_SUBRESOURCES = frozenset({"status"})
# Metadata the baseline keeps (`baseline.cleaned`); the rest is identity.
KEPT_METADATA = ("labels", "annotations")


@dataclass(frozen=True)
class ForeignField:
    """One field of an owned object owned by a manager that is not the operator's."""

    kind: str
    name: str
    path: str
    manager: str
    operation: str

    @property
    def content(self) -> bool:
        """Part of the object's content (not a label or annotation): the baseline cannot be
        trusted with it."""
        return not self.path.startswith("metadata.")

    def describe(self) -> str:
        return f"{self.kind} {self.name} {self.path} (field manager {self.manager})"


def _segment(key: str) -> str:
    """A managedFields key as a path segment: `f:spec` -> `spec`, a list item by its keys
    (`k:{"name":"web"}` -> `[name=web]`), a set's value (`v:"x"` -> `[x]`), an index."""
    prefix, _, rest = key.partition(":")
    if prefix == "f":
        return rest
    if prefix == "k":
        try:
            keys = json.loads(rest)
        except ValueError:
            return f"[{rest}]"
        return "[" + ",".join(f"{k}={v}" for k, v in keys.items()) + "]"
    if prefix == "v":
        try:
            return f"[{json.loads(rest)}]"
        except ValueError:
            return f"[{rest}]"
    return f"[{rest}]"  # i:N


def field_paths(
    fields: Mapping[str, Any], prefix: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    """Every field a FieldsV1 set names, as path segments (the raw keys); a node with
    children is named through them, one without (a leaf, an element owned as a whole) itself."""
    children = [key for key in fields if key != "."]
    if not children:
        if prefix:
            yield prefix
        return
    for key in children:
        value = fields[key]
        yield from field_paths(value if isinstance(value, Mapping) else {}, (*prefix, key))


def render(path: Sequence[str]) -> str:
    out = ""
    for key in path:
        part = _segment(key)
        out += part if part.startswith("[") or not out else f".{part}"
    return out


def _entries(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((obj.get("metadata") or {}).get("managedFields") or [])


def uid(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("uid") or "")


def _references(fields: Mapping[str, Any]) -> set[str]:
    """The owner UIDs whose reference this FieldsV1 set owns."""
    refs = ((fields.get("f:metadata") or {}).get("f:ownerReferences")) or {}
    uids = set()
    for key in refs:
        if key.startswith("k:"):
            try:
                uids.add(str(json.loads(key[2:]).get("uid") or ""))
            except (ValueError, AttributeError):
                continue
    return uids - {""}


def operator_managers(
    objects: Sequence[Mapping[str, Any]], owners: Sequence[Mapping[str, Any]]
) -> set[str]:
    """The managers that wrote an owned object's owner reference, or a custom resource's
    status (see the module docstring)."""
    uids = {uid(o) for o in [*owners, *objects]} - {""}
    found = set()
    for obj in objects:
        for entry in _entries(obj):
            if _references(entry.get("fieldsV1") or {}) & uids:
                found.add(str(entry.get("manager") or ""))
    for owner in owners:
        for entry in _entries(owner):
            if entry.get("subresource") in REPORT_SUBRESOURCES:
                found.add(str(entry.get("manager") or ""))
    return found - {""} - KUBERNETES_MANAGERS


def _earliest(entries: Sequence[Mapping[str, Any]]) -> set[str]:
    """The managers of the earliest of these entries (a creation's)."""
    times = [str(e.get("time") or "") for e in entries]
    first = min(times, default="")
    return {str(e.get("manager") or "") for e, t in zip(entries, times, strict=True) if t == first}


def _content_entries(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The object's managed-field entries that write content (no report subresource)."""
    return [e for e in _entries(obj) if e.get("subresource") not in REPORT_SUBRESOURCES]


def made_by_kubernetes(obj: Mapping[str, Any]) -> bool:
    """Whether Kubernetes' own controllers made the object (its earliest content write is
    theirs alone): a by-product of what the operator made - the EndpointSlice of its Service -,
    never the operator's desired state."""
    entries = _content_entries(obj)
    return bool(entries) and _earliest(entries) <= KUBERNETES_MANAGERS


def _creators(obj: Mapping[str, Any]) -> set[str]:
    """The managers of the object's earliest entry (its creation), Kubernetes' own aside."""
    return _earliest(
        [e for e in _content_entries(obj) if e.get("manager") not in KUBERNETES_MANAGERS]
    )


def _kept(
    path: tuple[str, ...], skipped_annotations: frozenset[str], prefixes: tuple[str, ...]
) -> bool:
    """Whether the baseline keeps this field."""
    head = path[0]
    if head == "f:status":
        return False
    if head != "f:metadata":
        return True
    if len(path) < 3 or path[1] not in tuple(f"f:{m}" for m in KEPT_METADATA):
        return False
    if path[1] == "f:annotations":
        name = path[2].partition(":")[2]
        return name not in skipped_annotations and not name.startswith(prefixes)
    return True


def foreign_fields(
    objects: Sequence[Mapping[str, Any]],
    owners: Sequence[Mapping[str, Any]],
    *,
    controller_annotations: Sequence[str] = (),
    controller_prefixes: Sequence[str] = (),
    known: Collection[str] = (),
) -> list[ForeignField]:
    """Every field the baseline keeps that a foreign manager owns and no operator manager
    does, per owned object (live, with its managedFields), in object order. `known`: the
    managers the target file names as the operator's (`operator.fieldManagers`)."""
    operators = operator_managers(objects, owners) | set(known)
    skipped, prefixes = frozenset(controller_annotations), tuple(controller_prefixes)
    out: list[ForeignField] = []
    for obj in objects:
        mine = operators or _creators(obj)
        entries = [e for e in _entries(obj) if e.get("subresource") not in REPORT_SUBRESOURCES]
        owned = {
            path
            for e in entries
            if e.get("manager") in mine
            for path in field_paths(e.get("fieldsV1") or {})
        }
        meta = obj.get("metadata") or {}
        for entry in entries:
            manager = str(entry.get("manager") or "")
            if manager in mine or manager in KUBERNETES_MANAGERS:
                continue
            for path in field_paths(entry.get("fieldsV1") or {}):
                if path in owned or not _kept(path, skipped, prefixes):
                    continue
                out.append(
                    ForeignField(
                        kind=str(obj.get("kind") or ""),
                        name=str(meta.get("name") or ""),
                        path=render(path),
                        manager=manager,
                        operation=str(entry.get("operation") or ""),
                    )
                )
    return out


def verdict(found: Sequence[ForeignField]) -> tuple[list[str], str | None]:
    """The warnings (labels and annotations set by others, kept as desired) and the refusal
    (None: the baseline can be trusted) of what `foreign_fields` found."""
    warnings = [
        f"{f.describe()}: set by another field manager than the operator's; kept as desired state"
        for f in found
        if not f.content
    ]
    content = [f for f in found if f.content]
    if not content:
        return warnings, None
    more = f" and {len(content) - 1} more field(s) are" if len(content) > 1 else " is"
    others = sorted({f.manager for f in content})
    named = ", ".join(others)
    return warnings, (
        f"the baseline cannot be trusted: {content[0].describe()}{more} owned by another"
        f" field manager than the operator's: if {named}"
        f" {'is' if len(others) == 1 else 'are'} the operator's own, list"
        f" {'it' if len(others) == 1 else 'them'} in operator.fieldManagers; else set"
        " operator.reclaimForeign: true (the object is deleted for the operator to re-create"
        " it) or delete it yourself and let the operator re-create it (an undo by hand stays"
        " that manager's)"
    )
