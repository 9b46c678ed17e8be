"""The closed-world comparison of one live object with its desired form.

Both sides come from the API server: the desired object after server-side dry-run (so it has
the API's defaults, see `compare.judge.desired`), the live one as read. Every top-level field
but identity and status is compared whole (`spec`, and `data`, `rules`, ... for other kinds),
and the object's labels too; a changed value, a removed field and an added one are all drift,
except what `compare.judge.allow` allows. Lists of named items (containers, env, volumes,
ports) are matched by their key, so a message names the item (`containers[webapp].image`).
A field the desired object leaves unset that only Kubernetes' own components wrote (the API
server, its controllers: `metadata.managedFields`, `compare.kube.managed`) is theirs, not
drift - for every kind alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from compare.judge.allow import (
    ALLOCATED,
    JUDGED_METADATA,
    NOT_JUDGED_TOP,
    OPEN_MAP,
    allocation_problem,
    rule_at,
)
from compare.judge.secrets import hashed_secret
from compare.kube.managed import kubernetes_only

Change = Literal["changed", "added", "removed", "missing", "deleting", "not-allowed"]
# Keys that identify an item of a list, in order of preference (the API's merge keys).
LIST_KEYS = ("name", "containerPort", "port", "mountPath", "devicePath", "ip", "key", "type")
MAX_REPR = 80


@dataclass(frozen=True)
class Mismatch:
    """One difference between the desired and the live object (`missing`: no live object;
    `deleting`: the live object has a deletionTimestamp, `desired` holds it and `actual` the
    finalizers that keep it)."""

    path: str
    change: Change
    desired: Any = None
    actual: Any = None

    def __str__(self) -> str:
        if self.change == "missing":
            return f"{self.path}: missing"
        if self.change == "deleting":
            finalizers = ", ".join(self.actual or ()) or "none"
            return f"{self.path}: being deleted since {self.desired} (finalizers: {finalizers})"
        if self.change == "not-allowed":
            return f"{self.path}: {self.desired}, got {_short(self.actual)}"
        if self.change == "added":
            return f"{self.path}: added {_short(self.actual)}"
        if self.change == "removed":
            return f"{self.path}: removed (want {_short(self.desired)})"
        return f"{self.path}: want {_short(self.desired)}, got {_short(self.actual)}"


def diff_object(
    root: str,
    desired: Mapping[str, Any],
    live: Mapping[str, Any] | None,
    *,
    raw: Mapping[str, Any] | None = None,
) -> list[Mismatch]:
    """Every judged difference; `root` names the object in paths (`deployment`).

    `raw` is the desired object before the API's defaults: an allocated field (clusterIP) is
    judged only when it sets it.
    """
    if live is None:
        return [Mismatch(root, "missing")]
    # A Secret's values are compared by hash, so no message can carry one.
    if "Secret" in (desired.get("kind"), live.get("kind")):
        desired, live = (
            hashed_secret({**desired, "kind": "Secret"}),
            hashed_secret({**live, "kind": "Secret"}),
        )
        raw = hashed_secret({**raw, "kind": "Secret"}) if raw is not None else None
    walk = _Walk(root, raw if raw is not None else desired, desired, live)
    keys = (set(desired) | set(live)) - {"metadata", *NOT_JUDGED_TOP}
    for key in sorted(keys):
        walk.value((key,), desired.get(key), live.get(key))
    meta_d, meta_l = desired.get("metadata") or {}, live.get("metadata") or {}
    for key in JUDGED_METADATA:
        walk.value(("metadata", key), meta_d.get(key), meta_l.get(key))
    return walk.found


def judged_field(
    desired: Mapping[str, Any], keys: Sequence[str], *, raw: Mapping[str, Any] | None = None
) -> bool:
    """Whether `diff_object` compares the field at `keys` (a field path below its object,
    list items by name as `compare.chaos.fields` writes them): not identity or status, not
    someone else's key in an open map, not an allocated field the desired object leaves unset."""
    if not keys or keys[0] in NOT_JUDGED_TOP:
        return not keys
    if keys[0] == "metadata" and (len(keys) < 2 or keys[1] not in JUDGED_METADATA):
        return False
    path: tuple[str, ...] = ()
    node: Any = desired
    for key in keys:
        if _is_list(node):
            path = (*path, f"[{key}]")
            node = next(
                (i for i in node if isinstance(i, Mapping) and str(i.get("name")) == key), None
            )
        else:
            mine = _raw_keys(raw if raw is not None else desired, path)
            if rule_at(path) == OPEN_MAP and not (isinstance(node, Mapping) and key in mine):
                return False
            path = (*path, _key(key))
            node = node.get(key) if isinstance(node, Mapping) else None
        if rule_at(path) == ALLOCATED and not _raw_sets(raw if raw is not None else desired, path):
            return False
    return True


class _Walk:
    def __init__(
        self,
        root: str,
        raw: Mapping[str, Any],
        desired: Mapping[str, Any],
        live: Mapping[str, Any],
    ) -> None:
        self.root = root
        self.raw = raw
        self.desired = desired
        self.live = live
        self.found: list[Mismatch] = []

    def value(self, path: tuple[str, ...], want: Any, got: Any) -> None:
        # Equal subtrees hold no difference whatever the rules (the common case, compared in C:
        # a controller judges every event with this).
        if want == got or (is_empty(want) and is_empty(got)):
            return
        rule = rule_at(path)
        if rule == ALLOCATED and not _raw_sets(self.raw, path):
            # Allowed as an allocation only (not when removed: the server never unsets one).
            why = None if is_empty(got) else allocation_problem(path, got, self.desired, self.live)
            if why is not None:
                self._add(path, "not-allowed", why, got)
            return
        if isinstance(want, Mapping) and isinstance(got, Mapping):
            self._map(path, want, got, open_map=rule == OPEN_MAP)
        elif _is_list(want) and _is_list(got):
            self._list(path, want, got)
        elif is_empty(want):
            # Added: drift, unless only Kubernetes' own components wrote it (who wrote each
            # field is in the live object's managedFields, whatever its kind).
            if rule != OPEN_MAP and not self._kubernetes(path, got):
                self._add(path, "added", None, got)
        elif is_empty(got):
            self._add(path, "removed", want, None)
        elif want != got:
            self._add(path, "changed", want, got)

    def _kubernetes(self, path: tuple[str, ...], got: Any) -> bool:
        """Whether only Kubernetes' own components wrote `got` at `path`, every part of it (a
        map or list added whole may hold someone else's key)."""
        if isinstance(got, Mapping) and got:
            return all(self._kubernetes((*path, _key(str(k))), v) for k, v in got.items())
        if _is_list(got) and got:
            key = list_key((), got)
            return all(
                self._kubernetes((*path, f"[{item[key] if key else index}]"), item)
                for index, item in enumerate(got)
            )
        return kubernetes_only(self.live, path)

    def _map(
        self, path: tuple[str, ...], want: Mapping[str, Any], got: Mapping[str, Any], open_map: bool
    ) -> None:
        # An open map's keys are the deployer's: those the raw desired object sets (an
        # annotation the API server adds on create, `deprecated.daemonset.template.generation`,
        # is the server's to change).
        mine = set(want) & _raw_keys(self.raw, path) if open_map else set()
        for key in sorted(set(want) | set(got)):
            if open_map and key not in mine:
                continue  # someone else's key in an open map
            self.value((*path, _key(key)), want.get(key), got.get(key))

    def _list(self, path: tuple[str, ...], want: Sequence[Any], got: Sequence[Any]) -> None:
        key = list_key(want, got)
        if key is None:
            if len(want) != len(got):
                self._add(path, "changed", want, got)
                return
            for index, (a, b) in enumerate(zip(want, got, strict=True)):
                self.value((*path, f"[{index}]"), a, b)
            return
        by_want = {str(item[key]): item for item in want}
        by_got = {str(item[key]): item for item in got}
        for name in [*by_want, *(n for n in by_got if n not in by_want)]:
            self.value((*path, f"[{name}]"), by_want.get(name), by_got.get(name))
        if [n for n in by_want if n in by_got] != [n for n in by_got if n in by_want]:
            self._add(path, "changed", list(by_want), list(by_got))  # same items, new order

    def _add(self, path: tuple[str, ...], change: Change, want: Any, got: Any) -> None:
        self.found.append(Mismatch(_render(self.root, path), change, want, got))


def list_key(want: Sequence[Any], got: Sequence[Any]) -> str | None:
    """The key that identifies the items of both lists (the API's merge key), if any."""
    items = [*want, *got]
    if not items or not all(isinstance(item, Mapping) for item in items):
        return None
    for key in LIST_KEYS:
        if all(key in item for item in items) and all(
            len({str(item[key]) for item in side}) == len(side) for side in (want, got)
        ):
            return key
    return None


def _raw_sets(raw: Mapping[str, Any], path: tuple[str, ...]) -> bool:
    """Whether the raw desired object sets `path` (list items matched by any key)."""
    nodes: list[Any] = [raw]
    for part in path:
        nxt: list[Any] = []
        for node in nodes:
            if part.startswith("[") and _is_list(node):
                nxt.extend(node)
            elif isinstance(node, Mapping) and _unkey(part) in node:
                nxt.append(node[_unkey(part)])
        nodes = [n for n in nxt if not is_empty(n)]
    return bool(nodes)


def _raw_keys(raw: Mapping[str, Any], path: tuple[str, ...]) -> set[str]:
    """The keys of the map at `path` in the raw desired object (list items matched by key)."""
    nodes: list[Any] = [raw]
    for part in path:
        nxt: list[Any] = []
        for node in nodes:
            if part.startswith("[") and _is_list(node):
                nxt.extend(i for i in node if _item_named(i, part[1:-1]))
            elif isinstance(node, Mapping) and _unkey(part) in node:
                nxt.append(node[_unkey(part)])
        nodes = nxt
    return {str(k) for node in nodes if isinstance(node, Mapping) for k in node}


def _item_named(item: Any, name: str) -> bool:
    return isinstance(item, Mapping) and any(str(item.get(k)) == name for k in LIST_KEYS)


def _key(key: str) -> str:
    # Map keys with dots or slashes (labels) are bracketed, as compare.chaos.fields reads them.
    return f"<{key}>" if ("." in key or "/" in key) else key


def _unkey(part: str) -> str:
    return part[1:-1] if part.startswith("<") else part


def _render(root: str, path: tuple[str, ...]) -> str:
    out = root
    for part in path:
        if part.startswith("["):
            out += part
        elif part.startswith("<"):
            out += f"[{part[1:-1]}]"
        else:
            out += f".{part}"
    return out


def _is_list(value: Any) -> bool:
    return isinstance(value, list | tuple)


def is_empty(value: Any) -> bool:
    # The API server omits empty maps and lists; absent, null and empty mean the same.
    return value is None or (isinstance(value, Mapping | list | tuple) and len(value) == 0)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= MAX_REPR else text[: MAX_REPR - 3] + "..."
