"""Reading older results files: a schemaVersion 1, 2 or 3 document becomes a version 4 one, in
memory, one version at a time (1 -> 2 -> 3 -> 4).

`compare report` and `compare check` keep working on runs recorded before version 4; the file
itself is never rewritten (saving always writes version 4). What changes (docs/results-schema.md,
"Migration from schemaVersion 1" and "... 2"):

From version 1 to 2:
- `schemaVersion` becomes 2; statuses, times and evidence are kept as they are;
- `settings.settleSeconds` becomes 0: version 1 counted a heal at the first reading that saw the
  desired state, without a settle period; `settings.pollIntervalSeconds` is kept and
  `settings.recheckIntervalSeconds` stays absent (null): version 1 runs polled;
- `trials[].timeToFirstHealSeconds` stays absent (null): version 1 did not record it, and its
  `timeToHealSeconds` is the first reading that saw the desired state.

A version 1 document that uses what only version 2 has (a `no-fault` status, a new key) is
rejected rather than half-read.

From version 2 to 3: the two settings version 2 had for two approaches by name move into
`settings.approachSettings`, each under its approach, as that approach records it now:
`fluxIntervalSeconds` becomes `approachSettings.flux.intervalSeconds` and `argocdDiff`
`approachSettings.argocd.diff` (those names are a fixed fact of version 2, spelled here once).
A version 2 document with `approachSettings` is rejected.

From version 3 to 4: `schemaVersion` becomes 4 and nothing else changes. Version 4 only adds
optional keys (`preflightFindings`, `clustersUsed`, `experiments[].skippedFor`), absent from a
version 3 file and read as absent; a version 3 document that has one is rejected.
"""

from __future__ import annotations

import math
from typing import Any, Final

# Settings and trial keys that did not exist in schemaVersion 1 (its models forbade them).
NEW_SETTINGS_KEYS: Final = ("settleSeconds", "recheckIntervalSeconds")
NEW_TRIAL_KEYS: Final = ("timeToFirstHealSeconds",)
V1_STATUSES: Final = ("healed", "not-healed", "error")
# Version 1 counted the first reading that saw the desired state: no settle period.
V1_SETTLE_SECONDS: Final = 0.0
# Version 2's settings of one approach each -> (the approach, its name for the setting now).
# Keys new in schemaVersion 4: at the top level, and in each `experiments[]` entry.
NEW_V4_KEYS: Final = ("preflightFindings", "clustersUsed")
NEW_V4_EXPERIMENT_KEYS: Final = ("skippedFor",)
V2_APPROACH_SETTINGS: Final = {
    "fluxIntervalSeconds": ("flux", "intervalSeconds"),
    "argocdDiff": ("argocd", "diff"),
}


class MigrationError(ValueError):
    """An older document that cannot be read as its version; `loc` names the field."""

    def __init__(self, loc: str, message: str) -> None:
        super().__init__(f"{loc}: {message}")
        self.loc = loc
        self.message = message


def upgrade(data: Any) -> Any:
    """The document as schemaVersion 4: a version 1, 2 or 3 dict is upgraded (a copy), others
    as given.

    Anything that is not a version 1, 2 or 3 document is returned unchanged, so validation
    reports what is wrong with it.
    """
    if isinstance(data, dict) and _is_version(data.get("schemaVersion"), 1):
        data = upgrade_v1(data)
    if isinstance(data, dict) and _is_version(data.get("schemaVersion"), 2):
        data = upgrade_v2(data)
    if isinstance(data, dict) and _is_version(data.get("schemaVersion"), 3):
        return upgrade_v3(data)
    return data


def upgrade_v1(data: dict[str, Any]) -> dict[str, Any]:
    """A schemaVersion 1 document as a version 2 one; the input is not modified."""
    doc = dict(data)
    settings = doc.get("settings")
    if isinstance(settings, dict):
        for key in NEW_SETTINGS_KEYS:
            if key in settings:
                raise MigrationError(f"settings.{key}", _new_in_v2("field"))
        if "pollIntervalSeconds" not in settings:
            raise MigrationError(
                "settings.pollIntervalSeconds", "required field is missing (schemaVersion 1)"
            )
        if settings["pollIntervalSeconds"] is None:
            raise MigrationError(
                "settings.pollIntervalSeconds", "must be a number in schemaVersion 1 (got null)"
            )
        doc["settings"] = {**settings, "settleSeconds": V1_SETTLE_SECONDS}
    trials = doc.get("trials")
    if isinstance(trials, list):
        for i, trial in enumerate(trials):
            if not isinstance(trial, dict):
                continue
            for key in NEW_TRIAL_KEYS:
                if key in trial:
                    raise MigrationError(f"trials[{i}].{key}", _new_in_v2("field"))
            status = trial.get("status")
            if isinstance(status, str) and status not in V1_STATUSES:
                raise MigrationError(
                    f"trials[{i}].status",
                    f"{status!r} is not a schemaVersion 1 status (healed, not-healed, error)"
                    + ("; no-fault is new in schemaVersion 2" if status == "no-fault" else ""),
                )
    doc["schemaVersion"] = 2
    return doc


def upgrade_v2(data: dict[str, Any]) -> dict[str, Any]:
    """A schemaVersion 2 document as a version 3 one; the input is not modified."""
    doc = dict(data)
    settings = doc.get("settings")
    if isinstance(settings, dict):
        if "approachSettings" in settings:
            raise MigrationError(
                "settings.approachSettings",
                "unknown field in schemaVersion 2 (it is new in schemaVersion 3)",
            )
        moved: dict[str, dict[str, Any]] = {}
        kept = {}
        for key, value in settings.items():
            if key not in V2_APPROACH_SETTINGS:
                kept[key] = value
            elif value is not None:  # version 2 read null as absent
                _check_v2_setting(key, value)
                approach, name = V2_APPROACH_SETTINGS[key]
                moved.setdefault(approach, {})[name] = value
        doc["settings"] = {**kept, "approachSettings": moved}
    doc["schemaVersion"] = 3
    return doc


def upgrade_v3(data: dict[str, Any]) -> dict[str, Any]:
    """A schemaVersion 3 document as a version 4 one; the input is not modified."""
    for key in NEW_V4_KEYS:
        if key in data:
            raise MigrationError(key, _new_in("field", 3))
    experiments = data.get("experiments")
    if isinstance(experiments, list):
        for i, experiment in enumerate(experiments):
            if not isinstance(experiment, dict):
                continue
            for key in NEW_V4_EXPERIMENT_KEYS:
                if key in experiment:
                    raise MigrationError(f"experiments[{i}].{key}", _new_in("field", 3))
    return {**data, "schemaVersion": 4}


def _check_v2_setting(key: str, value: Any) -> None:
    """What version 2's model checked of these settings (a number > 0, a non-empty string):
    a file it rejected is not read as version 3 either."""
    if key == "fluxIntervalSeconds":
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not math.isfinite(value) or value <= 0:
            raise MigrationError(f"settings.{key}", f"must be a number > 0 (got {value!r})")
    elif not isinstance(value, str) or not value:
        raise MigrationError(f"settings.{key}", f"must be a non-empty string (got {value!r})")


def _is_version(value: Any, version: int) -> bool:
    return value == version and not isinstance(value, bool)


def _new_in_v2(what: str) -> str:
    return _new_in(what, 1)


def _new_in(what: str, version: int) -> str:
    return f"unknown {what} in schemaVersion {version} (it is new in schemaVersion {version + 1})"
