"""Who owns a field of an object: the field managers the API server records in
`metadata.managedFields`, read for the judge.

The API server records, per object, which field manager set each field (FieldsV1: `f:spec`, a
list item by its keys `k:{"name":"web"}`, a set's value `v:"x"`, an index `i:0`; a node with
no children is owned whole). Two questions of the judge are answered from it, for every kind
alike - never a list of fields per kind:

- `owners`: who wrote a field the desired object leaves unset. Kubernetes' own components
  (the API server, its controllers: a PersistentVolumeClaim's `spec.volumeName` the volume
  binder writes) never write the desired state; a field only they own is theirs, not drift
  (`compare.judge.diff`).
- `without_foreign`: the result of a server-side apply dry-run onto an existing object (a kind
  whose name is fixed, `compare.judge.desired`) less what other managers own alone - their
  fields are not the deployer's desired state.

Pure functions over API JSON (they import nothing: the results' `writers` share the
managers). Writes through a subresource (`status`, `scale`) are reports or a scaler's, never
the object's content: only the main resource's entries count.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["KUBERNETES_MANAGERS", "kubernetes_only", "owners", "without_foreign"]

# Kubernetes' own writers: its API server and controllers (they re-create a deleted pod or
# ReplicaSet whatever deploys the app, bind a claim to a volume): never the desired state's
# authors.
KUBERNETES_MANAGERS = frozenset(
    {"kube-controller-manager", "kube-scheduler", "kubelet", "kube-apiserver"}
)


def _entries(obj: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The main resource's managed-field entries (no subresource)."""
    entries = (obj.get("metadata") or {}).get("managedFields") or []
    return [e for e in entries if isinstance(e, Mapping) and not e.get("subresource")]


def _child(node: Mapping[str, Any], part: str) -> Any:
    """The FieldsV1 child for one diff path part: `spec`, `<a.b/c>` (a bracketed map key),
    `[x]` (a list item by its key's value, a set's value, or an index)."""
    if not part.startswith("["):
        key = part[1:-1] if part.startswith("<") else part
        return node.get(f"f:{key}")
    wanted = part[1:-1]
    for key, value in node.items():
        prefix, _, rest = key.partition(":")
        try:
            if prefix == "k" and wanted in {str(v) for v in json.loads(rest).values()}:
                return value
            if prefix == "v" and str(json.loads(rest)) == wanted:
                return value
        except (ValueError, AttributeError):
            continue
        if prefix == "i" and rest == wanted:
            return value
    return None


def _holds(fields: Mapping[str, Any], path: Sequence[str]) -> bool:
    node: Any = fields
    for part in path:
        if not isinstance(node, Mapping):
            return False
        if not node and node is not fields:
            return True  # owned whole (an atomic field): everything below it too
        node = _child(node, part)
        if node is None:
            return False
    return True


def owners(obj: Mapping[str, Any], path: Sequence[str]) -> set[str]:
    """The managers whose main-resource entry owns the field at `path` (parts as
    `compare.judge.diff` names them) or an atomic field above it."""
    return {
        str(entry.get("manager") or "")
        for entry in _entries(obj)
        if _holds(entry.get("fieldsV1") or {}, path)
    }


def kubernetes_only(obj: Mapping[str, Any], path: Sequence[str]) -> bool:
    """Whether only Kubernetes' own components wrote the field at `path` (some did, and no
    one else)."""
    found = owners(obj, path)
    return bool(found) and found <= KUBERNETES_MANAGERS


def _leaves(fields: Mapping[str, Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    if not fields or ("." in fields and prefix and prefix[-1][:2] in ("k:", "v:", "i:")):
        if prefix:
            yield prefix  # owned whole, or a list item whose existence it owns
        return
    for key in [key for key in fields if key != "."]:
        value = fields[key]
        yield from _leaves(value if isinstance(value, Mapping) else {}, (*prefix, key))


def _raw_holds(fields: Mapping[str, Any], keys: Sequence[str]) -> bool:
    """Whether a FieldsV1 set owns the field named by raw keys, or an atomic field above it."""
    node: Any = fields
    for key in keys:
        if not isinstance(node, Mapping):
            return False
        if node is not fields and not node:
            return True
        node = node.get(key)
        if node is None:
            return False
    return True


def _matches(item: Any, key: str) -> bool:
    prefix, _, rest = key.partition(":")
    try:
        if prefix == "k":
            wanted = json.loads(rest)
            return isinstance(item, Mapping) and all(item.get(k) == v for k, v in wanted.items())
        if prefix == "v":
            return bool(item == json.loads(rest))
    except ValueError:
        return False
    return False


def _remove(node: Any, keys: Sequence[str]) -> None:
    """Remove the field named by raw FieldsV1 keys from an object, where it is there."""
    if not keys:
        return
    key, rest = keys[0], keys[1:]
    prefix, _, name = key.partition(":")
    if prefix == "f" and isinstance(node, dict) and name in node:
        if rest:
            _remove(node[name], rest)
            if node[name] in ({}, []):
                del node[name]  # emptied here: the API server omits an empty map or list
        else:
            del node[name]
    elif prefix in ("k", "v") and isinstance(node, list):
        for index, item in enumerate(node):
            if _matches(item, key):
                if rest:
                    _remove(item, rest)
                else:
                    del node[index]
                return
    elif prefix == "i" and isinstance(node, list) and name.isdigit() and int(name) < len(node):
        if rest:
            _remove(node[int(name)], rest)
        else:
            del node[int(name)]


def without_foreign(obj: Mapping[str, Any], mine: str) -> dict[str, Any]:
    """A copy of `obj` without the fields other managers own and `mine` does not (status and
    identity are not the judge's business and stay as they are)."""
    entries = _entries(obj)
    own = [e.get("fieldsV1") or {} for e in entries if e.get("manager") == mine]
    out = copy.deepcopy(dict(obj))
    for entry in entries:
        if entry.get("manager") == mine:
            continue
        for keys in _leaves(entry.get("fieldsV1") or {}):
            if keys[0] == "f:status" or any(_raw_holds(fields, keys) for fields in own):
                continue
            _remove(out, keys)
    return out
