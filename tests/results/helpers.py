"""Recorded results files (tests/fixtures/results/<name>/results.json) and edited copies."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "results"
# full-run: 13 faults x 2 approaches x 3 trials, as the mission predicts (schemaVersion 2, a
# watched run: no poll resolution); with-errors: error trials, mixed outcomes, a user experiment
# and two flaps (version 2, polled); interrupted: complete=false with trials missing (version 2,
# polled); single-trial: one trial per cell (version 1); no-fault-and-flaps: version 2 with
# no-fault trials, flaps, chaostoolkit disagreements and a watch cross-check disagreement. Those
# are hand-made; recorded-helm is a real `compare run` (helm only, 1 trial, 3 s window) on the
# embedded cluster, recorded as version 1.
NAMES = (
    "full-run",
    "with-errors",
    "interrupted",
    "single-trial",
    "recorded-helm",
    "no-fault-and-flaps",
)
# Kept exactly as version 1 wrote them: they prove that old runs still load and report.
V1_NAMES = ("single-trial", "recorded-helm")
V2_NAMES = tuple(n for n in NAMES if n not in V1_NAMES)
# The policy the fixture runs are judged by (the 13-fault catalogue's); experiments/policy.yaml
# grows with the catalogue, so tests with exact counts do not use it.
POLICY = FIXTURES / "policy.yaml"


def fixture(name: str) -> Path:
    return FIXTURES / name / "results.json"


def fixture_json(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(fixture(name).read_text())
    return copy.deepcopy(data)


def write_run(root: Path, data: Any, name: str = "run") -> Path:
    """A run directory under root holding data as results.json (raw text if data is str)."""
    run = root / name
    run.mkdir(parents=True, exist_ok=True)
    text = data if isinstance(data, str) else json.dumps(data, indent=2)
    (run / "results.json").write_text(text)
    return run


def as_v3(data: dict[str, Any]) -> dict[str, Any]:
    """A version 2 document as version 3 reads it (`compare.results.migrate.upgrade_v2`), for
    comparisons: its approaches' settings under `settings.approachSettings`."""
    doc = copy.deepcopy(data)
    assert doc["schemaVersion"] == 2
    settings = doc["settings"]
    moved: dict[str, dict[str, Any]] = {}
    if settings.get("fluxIntervalSeconds") is not None:
        moved["flux"] = {"intervalSeconds": settings["fluxIntervalSeconds"]}
    if settings.get("argocdDiff") is not None:
        moved["argocd"] = {"diff": settings["argocdDiff"]}
    settings.pop("fluxIntervalSeconds", None)
    settings.pop("argocdDiff", None)
    settings["approachSettings"] = moved
    doc["schemaVersion"] = 3
    return doc


def as_v4(data: dict[str, Any]) -> dict[str, Any]:
    """A version 2 document as version 4 (the current one) reads it: as version 3, with only
    its version changed (`compare.results.migrate.upgrade_v3`)."""
    return {**as_v3(data), "schemaVersion": 4}
