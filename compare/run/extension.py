"""The shape of an experiment's `compare` extension block, checked strictly.

Every key has one type and is never coerced: `"exclusive": "false"` is a string, not false; a
numeric `fault`, an `evidence` string or an unknown key (a typo such as `injecton`) is an
error naming the key. The values themselves (known approaches, targets, scopes, ...) are
checked by `compare.run.experiments`, which reads the block after this check.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compare.errors import CompareError

EXTENSION = "compare"

# key -> (accepted types, what the message says it must be)
_KEYS: dict[str, tuple[tuple[type, ...], str]] = {
    "name": ((str,), "a string"),
    "fault": ((str,), "a non-empty string"),
    "approaches": ((list,), "a non-empty list"),
    "except-approaches": ((list,), "a list"),
    "evidence": ((dict, type(None)), 'an object {"target": ..., "field": ...} or null'),
    "injection": ((str,), "the name of a method action (a string)"),
    "exclusive": ((bool,), "true or false"),
    "scope": ((str,), "a string"),
    "requires": ((list,), "a list"),
    "kinds": ((list,), "a list"),
    "requires-field": ((str,), "a field path (a string)"),
    "skip-when": ((list,), 'a list of {"field", "values", "reason"}'),
}
_EVIDENCE_KEYS = ("target", "field")


def where(key: str) -> str:
    """How messages name a key of the block: `extensions[compare].<key>`."""
    return f"extensions[{EXTENSION}].{key}"


def check_shape(document: dict[str, Any], path: Path) -> None:
    """The experiment's structure, before chaoslib reads it: chaoslib assumes the shapes of
    its schema (a `method` that is an object, an activity that is a number, a `provider` that
    is a string made it fail with an AttributeError or TypeError, exit 3 naming no file)."""

    def fail(key: str, wanted: str, value: Any) -> CompareError:
        return CompareError(f"{path}: {key}: must be {wanted}, got {_kind(value)}")

    for key in ("title", "description"):
        if key in document and not isinstance(document[key], str):
            raise fail(key, "a string", document[key])
    for key in ("configuration", "secrets", "steady-state-hypothesis"):
        if key in document and not isinstance(document[key], dict):
            raise fail(key, "an object", document[key])
    tags = document.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise fail("tags", "a list of strings", tags)
    activities: list[tuple[str, Any]] = []
    hypothesis = document.get("steady-state-hypothesis")
    if isinstance(hypothesis, dict) and "probes" in hypothesis:
        probes = hypothesis["probes"]
        if not isinstance(probes, list):
            raise fail("steady-state-hypothesis.probes", "a list of activities", probes)
        activities += [(f"steady-state-hypothesis.probes[{i}]", a) for i, a in enumerate(probes)]
    for key in ("method", "rollbacks"):
        if key in document:
            items = document[key]
            if not isinstance(items, list):
                raise fail(key, "a list of activities", items)
            activities += [(f"{key}[{i}]", a) for i, a in enumerate(items)]
    for at, activity in activities:
        if not isinstance(activity, dict):
            raise fail(at, "an activity (an object)", activity)
        if "provider" in activity and not isinstance(activity["provider"], dict):
            raise fail(f"{at}.provider", "an object", activity["provider"])
        if "name" in activity and not isinstance(activity["name"], str):
            raise fail(f"{at}.name", "a string", activity["name"])
    extensions = document.get("extensions") or []
    for i, extension in enumerate(extensions if isinstance(extensions, list) else []):
        if not isinstance(extension, dict):
            raise fail(f"extensions[{i}]", "an object", extension)
        if not isinstance(extension.get("name"), str):
            raise fail(f"extensions[{i}].name", "a string", extension.get("name"))


def find_extension(document: dict[str, Any], path: Path) -> dict[str, Any]:
    """The experiment's `compare` block, checked (an empty dict when there is none)."""
    extensions = document.get("extensions")
    if extensions is None:
        return {}
    if not isinstance(extensions, list):
        raise CompareError(
            f"{path}: extensions: must be a list of objects, got {_kind(extensions)}"
        )
    found = [e for e in extensions if isinstance(e, dict) and e.get("name") == EXTENSION]
    if len(found) > 1:
        raise CompareError(f"{path}: extensions: {len(found)} blocks named {EXTENSION!r}")
    if not found:
        return {}
    check_extension(found[0], path)
    return found[0]


def check_extension(ext: dict[str, Any], path: Path) -> None:
    """Unknown keys and wrong types are errors (one line naming the file and the key)."""
    for key, value in ext.items():
        if key not in _KEYS:
            known = ", ".join(k for k in _KEYS if k != "name")
            raise CompareError(f"{path}: {where(key)}: unknown key (known: {known})")
        types, wanted = _KEYS[key]
        if key == "exclusive" and not isinstance(value, bool):
            raise CompareError(f"{path}: {where(key)}: must be true or false")
        if not isinstance(value, types):
            raise CompareError(f"{path}: {where(key)}: must be {wanted}, got {_kind(value)}")
    if "fault" in ext and not ext["fault"].strip():
        raise CompareError(f"{path}: {where('fault')}: must be a non-empty string")
    for key in ("approaches", "except-approaches", "requires", "kinds"):
        for i, item in enumerate(ext.get(key) or []):
            if not isinstance(item, str):
                raise CompareError(
                    f"{path}: {where(key)}[{i}]: must be a string, got {_kind(item)}"
                )
    evidence = ext.get("evidence") or {}
    for key, value in evidence.items():
        if key not in _EVIDENCE_KEYS:
            raise CompareError(
                f"{path}: {where('evidence')}.{key}: unknown key (known: target, field)"
            )
        if value is not None and not isinstance(value, str):
            raise CompareError(
                f"{path}: {where('evidence')}.{key}: must be a string or null, got {_kind(value)}"
            )


def check_injection(method: list[Any], injection: str, path: Path) -> None:
    """The injection names an action of the method: the clock starts at its end, so a probe
    (which changes nothing) would start it at the wrong activity."""
    kinds = {a.get("name"): a.get("type") for a in method if isinstance(a, dict)}
    if injection not in kinds:
        raise CompareError(f"{path}: {where('injection')}: no method activity named {injection!r}")
    if kinds[injection] != "action":
        raise CompareError(
            f"{path}: {where('injection')}: {injection!r} is a {kinds[injection]}, not an"
            " action (the injection is the action that makes the fault)"
        )


def _kind(value: object) -> str:
    names = {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}
    for kind, name in names.items():
        if isinstance(value, kind):
            return f"{name} {value!r}" if kind in (str, bool) else name
    if value is None:
        return "null"
    return f"a number {value!r}" if isinstance(value, int | float) else type(value).__name__
