"""Recorded results files (tests/fixtures/results/<name>/results.json) and edited copies."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "results"
# full-run: 13 faults x 2 approaches x 3 trials, as the mission predicts;
# with-errors: error trials, mixed outcomes, a user experiment; interrupted: complete=false
# with trials missing; single-trial: one trial per cell. Those four are hand-made;
# recorded-helm is a real `compare run` (helm only, 1 trial, 3 s window) on the embedded cluster.
NAMES = ("full-run", "with-errors", "interrupted", "single-trial", "recorded-helm")


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
