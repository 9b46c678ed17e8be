"""Each approach's settings in the reports, in the approach's own words (schemaVersion 3's
`settings.approachSettings`), exactly as the reports said them before.

The files under tests/fixtures/reports/approach-settings/ were rendered by the code before
schemaVersion 3 (commit ac139e7, when results.json had `fluxIntervalSeconds` and `argocdDiff`)
from the version 2 document `_v2` builds, with the results file's path replaced by `SOURCE`.
They are pinned: never regenerate them with the current code.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from compare import approaches
from compare.report import ReportData, ReportFormat, render
from compare.results import load_results, summarize
from tests.results.helpers import fixture_json, write_run

GOLDEN = Path(__file__).resolve().parents[1] / "fixtures" / "reports" / "approach-settings"
FORMATS = {ReportFormat.table: "txt", ReportFormat.md: "md", ReportFormat.html: "html"}


def _v2() -> dict[str, Any]:
    """A version 2 run that recorded the two settings version 2 had by approach name."""
    data = fixture_json("no-fault-and-flaps")
    assert data["schemaVersion"] == 2
    data["settings"]["fluxIntervalSeconds"] = 7.5
    data["settings"]["argocdDiff"] = "server-side"
    return data


def _v3(approach_settings: dict[str, Any]) -> dict[str, Any]:
    data = fixture_json("no-fault-and-flaps")
    data["schemaVersion"] = 3
    data["settings"]["approachSettings"] = approach_settings
    return data


def _data(root: Path, doc: dict[str, Any]) -> ReportData:
    run = write_run(root, doc)
    source = run / "results.json"
    return ReportData(summary=summarize(load_results(source)), source=source, output_dir=run)


# The same settings as `_v2`, as schemaVersion 3 records them (in the run's order of
# approaches, not the report's).
V3_SETTINGS = {"argocd": {"diff": "server-side"}, "flux": {"intervalSeconds": 7.5}}


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("version", [2, 3])
def test_reports_are_byte_identical_to_those_before_schema_3(
    fmt: ReportFormat, version: int, tmp_path: Path
) -> None:
    data = _data(tmp_path, _v2() if version == 2 else _v3(V3_SETTINGS))
    golden = (GOLDEN / f"report.{FORMATS[fmt]}").read_text()
    assert render(fmt, data).replace(str(data.source), "SOURCE") == golden


def test_settings_line_shows_each_approach_in_its_own_words(tmp_path: Path) -> None:
    data = _data(tmp_path, _v3(V3_SETTINGS))
    assert data.approach_settings() == ["flux interval 7.5 s", "argocd diff server-side"]
    assert "; settle 1 s; flux interval 7.5 s; argocd diff server-side; watched" in (
        data.settings_line()
    )


def test_an_approach_not_registered_is_shown_generically_after_the_registered(
    tmp_path: Path,
) -> None:
    settings = {
        "kustomize": {"intervalSeconds": 3.0, "prune": True, "path": "./deploy"},
        "helm": {},  # nothing recorded: nothing shown
        "flux": {"intervalSeconds": 5},
    }
    data = _data(tmp_path, _v3(settings))
    assert data.approach_settings() == [
        "flux interval 5 s",
        "kustomize intervalSeconds=3, prune=true, path=./deploy",
    ]


def test_settings_a_registered_approach_does_not_know_are_shown_generically(
    tmp_path: Path,
) -> None:
    # A hand-edited or later file: the approach's words only for what it records itself.
    settings = {"flux": {"intervalSeconds": 5.0, "suspend": False}, "argocd": {"diff": 3}}
    data = _data(tmp_path, _v3(settings))
    assert data.approach_settings() == [
        "flux intervalSeconds=5, suspend=false",
        "argocd diff=3",
    ]


def test_a_run_without_approach_settings_shows_none(tmp_path: Path) -> None:
    data = _data(tmp_path, fixture_json("no-fault-and-flaps"))
    assert data.approach_settings() == []
    assert data.settings_line().endswith("heal window 5 s; settle 1 s; watched (re-read every 2 s)")
    assert json.loads((tmp_path / "run" / "results.json").read_text())["schemaVersion"] == 2


@pytest.mark.parametrize("approach", approaches.REGISTRY, ids=approaches.names())
def test_every_approach_describes_what_it_records_in_its_own_words(
    approach: approaches.Approach,
) -> None:
    recorded = approach.run_settings()
    # What is recorded must be JSON (results.json) and read back the same.
    assert json.loads(json.dumps(recorded)) == recorded
    if recorded:
        text = approaches.describe_settings(approach.name, recorded)
        assert text.startswith(f"{approach.name} ")
        assert text != approaches.contract.describe_settings(approach.name, recorded)
