"""Whether a fault can change the app's object of the shape it has, decided at planning.

Like `requires-field` (`compare.run.experiments.ExperimentSpec.unmet`), from the app's parts as
rendered (`compare.run.workload.Workload.objects`), before anything runs:

- an injection that writes the value the object has already changes nothing (a headless copy
  of a headless Service, ClientIP session affinity where it is set): its trial would see only
  the moment a recreated object is missing and read that as a heal. Found from the injection's
  own patch (`patch_object` with a merge or strategic patch, `recreate_object`) at the
  evidence's field;
- an object shape the API server refuses the injection for (`skip-when` of the experiment's
  `compare` block: a list of `{"field", "values", "reason"}`, e.g. a headless copy of a
  NodePort Service) would end in `error`.

Either leaves the experiment out of the run with the reason, never a trial.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from chaoslib import substitute

from compare.chaos.actions import merge_patch
from compare.chaos.fields import parse_path, read_path
from compare.errors import CompareError

ACTIONS = "compare.chaos.actions"
# Its actions that write a patch given in the experiment (a JSON patch, a list of operations,
# is not read here: `requires-field` covers a removal).
PATCHING = ("patch_object", "recreate_object")


def unchanged(
    document: Mapping[str, Any],
    injection: str,
    field: str | None,
    objects: Mapping[str, Mapping[str, Any]],
    values: Mapping[str, Any],
    source: str = "the app's manifest",
) -> str | None:
    """Why the injection would change nothing at `field` of the app's object (None: it
    would change it, or it cannot be told). `values` resolve `${key}` in its arguments;
    `source` is where the objects come from, for the reason."""
    if not field or not objects:
        return None
    action = next(
        (
            a
            for a in document.get("method") or []
            if isinstance(a, Mapping) and a.get("type") == "action" and a.get("name") == injection
        ),
        None,
    )
    provider = (action or {}).get("provider") or {}
    if provider.get("module") != ACTIONS or provider.get("func") not in PATCHING:
        return None
    arguments = substitute(copy.deepcopy(provider.get("arguments") or {}), dict(values), {})
    patch = arguments.get("patch")
    if not isinstance(patch, Mapping) or arguments.get("patch_type") == "json":
        return None
    root = parse_path(field)[0]
    obj = objects.get(root)
    if obj is None or str(arguments.get("kind", "")).lower() != root:
        return None
    before = read_path(field, {root: copy.deepcopy(dict(obj))})
    after = read_path(field, {root: merge_patch(copy.deepcopy(dict(obj)), dict(patch))})
    if before is None or before != after:
        return None
    return f"changes nothing: {field} is {before!r} in {source} already"


def refused(
    rules: Sequence[Mapping[str, Any]],
    objects: Mapping[str, Mapping[str, Any]],
    source: str = "the app's manifest",
) -> str | None:
    """The reason of the first `skip-when` rule the app's object matches (None: none)."""
    for rule in rules:
        field = str(rule["field"])
        value = read_path(field, dict(objects))
        if value is not None and value in rule["values"]:
            return f"{rule['reason']} ({field} is {value!r} in {source})"
    return None


def check_rules(rules: Any) -> str | None:
    """What is wrong with a `skip-when` list (None: nothing), for the file's one-line error."""
    for index, rule in enumerate(rules):
        if not isinstance(rule, dict) or set(rule) != {"field", "values", "reason"}:
            return f'[{index}]: must be an object with exactly "field", "values" and "reason"'
        if not isinstance(rule["field"], str) or not isinstance(rule["reason"], str):
            return f"[{index}]: field and reason must be strings"
        if not isinstance(rule["values"], list) or not rule["values"]:
            return f"[{index}].values: must be a non-empty list"
        try:
            parse_path(rule["field"])
        except CompareError as exc:
            return f"[{index}].field: {exc}"
    return None
