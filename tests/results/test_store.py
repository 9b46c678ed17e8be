"""results.json: round trips, atomic saves, one-line errors, finding the latest run.

The schemaVersion 2 rules (no-fault, first vs settled heal, the typed evidence keys) and the
migration of version 1 files are in test_schema_v2.py.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from compare.errors import EXIT_USAGE, CompareError
from compare.results import (
    SCHEMA_VERSION,
    Evidence,
    RunResults,
    latest_run,
    load_results,
    resolve_results,
    save_results_json,
)
from tests.results.helpers import V2_NAMES, as_v4, fixture, fixture_json, write_run


@pytest.mark.parametrize("name", V2_NAMES)
def test_fixture_loads_as_the_current_version_and_round_trips_unchanged(name: str) -> None:
    original = json.loads(fixture(name).read_text())
    assert original["schemaVersion"] == 2 and SCHEMA_VERSION == 4
    upgraded = load_results(fixture(name)).to_json()
    assert upgraded == as_v4(original)
    assert RunResults.from_json(upgraded).to_json() == upgraded


def test_load_accepts_run_dir_and_file() -> None:
    by_dir = load_results(fixture("full-run").parent)
    by_file = load_results(fixture("full-run"))
    assert by_dir == by_file
    assert by_dir.schema_version == SCHEMA_VERSION
    assert by_dir.run_id == "20261202T120000Z-ab12"
    assert len(by_dir.trials) == 75


def test_save_is_atomic_and_loadable(tmp_path: Path) -> None:
    results = load_results(fixture("with-errors"))
    path = save_results_json(results.to_json(), tmp_path / "run")
    assert path == tmp_path / "run" / "results.json"
    assert sorted(p.name for p in path.parent.iterdir()) == ["results.json"]  # no temp left
    assert load_results(path) == results
    # Saving again replaces the file whole.
    results.complete = False
    save_results_json(results.to_json(), tmp_path / "run")
    assert load_results(path).complete is False


def test_save_failure_leaves_previous_file(tmp_path: Path) -> None:
    results = load_results(fixture("single-trial"))
    path = save_results_json(results.to_json(), tmp_path)
    before = path.read_text()
    results.app.spec["bad"] = object()  # not JSON-serialisable: the write must fail cleanly
    with pytest.raises(Exception):  # noqa: B017 - whichever serialiser error, the file survives
        save_results_json(results.to_json(), tmp_path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results.json"]


def test_python_names_are_snake_case_and_json_camel_case() -> None:
    results = load_results(fixture("full-run"))
    trial = results.trials[0]
    assert trial.time_to_heal_seconds is not None
    assert trial.evidence.uids_before is not None
    doc = results.to_json()
    assert "timeToHealSeconds" in doc["trials"][0]
    assert "uidsBefore" in doc["trials"][0]["evidence"]
    assert RunResults.from_json(doc) == results


def test_evidence_keeps_extra_keys() -> None:
    data = fixture_json("single-trial")
    data["trials"][0]["evidence"]["crStatus"] = {"phase": "Running"}
    data["trials"][0]["evidence"]["uidsBefore"]["webapp"] = "uid-cr"
    results = RunResults.from_json(data)
    assert results.to_json()["trials"][0]["evidence"]["crStatus"] == {"phase": "Running"}
    assert results.to_json()["trials"][0]["evidence"]["uidsBefore"]["webapp"] == "uid-cr"


def test_error_trials_may_omit_evidence() -> None:
    data = fixture_json("with-errors")
    errored = [t for t in data["trials"] if t["status"] == "error"]
    assert errored
    for t in errored:
        del t["evidence"]
    results = RunResults.from_json(data)
    assert all(t.evidence.uids_before is None for t in results.trials if t.status == "error")


def _break(name: str, edit: Any) -> dict[str, Any]:
    data = fixture_json(name)
    edit(data)
    return data


BAD: list[tuple[str, Any, str]] = [
    ("schema-missing", lambda d: d.pop("schemaVersion"), "schemaVersion: required field"),
    (
        "schema-newer",
        lambda d: d.update(schemaVersion=5),
        "schemaVersion 5 is not supported (this toolkit reads 1, 2, 3 and 4; it writes 4)",
    ),
    ("schema-string", lambda d: d.update(schemaVersion="1"), 'schemaVersion "1" is not supported'),
    ("schema-bool", lambda d: d.update(schemaVersion=True), "schemaVersion true is not supported"),
    ("missing-field", lambda d: d["cluster"].pop("server"), "cluster.server: required field"),
    ("missing-trials", lambda d: d.pop("trials"), "trials: required field is missing"),
    (
        "bad-status",
        lambda d: d["trials"][2].update(status="ok"),
        "trials[2].status: Input should be 'healed', 'not-healed', 'no-fault' or 'error'",
    ),
    (
        "unknown-field",
        lambda d: d["trials"][0].update(timeToHeal=1),
        "trials[0].timeToHeal: unknown field",
    ),
    (
        "healed-without-time",
        lambda d: d["trials"][0].update(timeToHealSeconds=None),
        "trials[0]: a healed trial needs timeToHealSeconds",
    ),
    (
        "negative-time",
        lambda d: d["trials"][0].update(timeToHealSeconds=-1),
        "trials[0].timeToHealSeconds: Input should be greater than or equal to 0",
    ),
    (
        "naive-time",
        lambda d: d.update(startedAt="2026-12-02T12:00:00"),
        "startedAt: Input should have timezone info",
    ),
    (
        "unknown-experiment",
        lambda d: d["trials"][0].update(experiment="no-such-fault"),
        "experiment 'no-such-fault' is not in experiments",
    ),
    (
        "duplicate-trial",
        lambda d: d["trials"].append(dict(d["trials"][0])),
        "pod-delete-one/helm trial 1 appears twice",
    ),
    ("trials-not-list", lambda d: d.update(trials={}), "trials: Input should be a valid list"),
]


@pytest.mark.parametrize(("case", "edit", "message"), BAD, ids=[b[0] for b in BAD])
def test_malformed_results_name_file_and_field(
    tmp_path: Path, case: str, edit: Any, message: str
) -> None:
    run = write_run(tmp_path, _break("full-run", edit))
    with pytest.raises(CompareError) as caught:
        load_results(run)
    text = str(caught.value)
    assert text.startswith(f"{run / 'results.json'}: "), text
    assert message in text
    assert "\n" not in text
    assert caught.value.exit_code == EXIT_USAGE


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON (line 1, column 2"),
        ("", "not valid JSON (line 1, column 1"),
        ("[1, 2]", "expected a JSON object, got an array"),
        ("null", "expected a JSON object, got null"),
    ],
)
def test_not_json_or_not_an_object(tmp_path: Path, content: str, message: str) -> None:
    run = write_run(tmp_path, content)
    with pytest.raises(CompareError) as caught:
        load_results(run / "results.json")
    assert str(caught.value).startswith(f"{run / 'results.json'}: {message}")


def test_missing_paths(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match=r"no results\.json in"):
        load_results(tmp_path)
    with pytest.raises(CompareError, match="not found"):
        load_results(tmp_path / "nope.json")
    with pytest.raises(CompareError, match="no such run directory or results file"):
        resolve_results(tmp_path / "nope", tmp_path)


def test_latest_run_is_newest_results_file(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match=r"no run with a results\.json under"):
        latest_run(tmp_path)
    with pytest.raises(CompareError, match=r"no run with a results\.json under"):
        latest_run(tmp_path / "absent")
    old = write_run(tmp_path, fixture_json("full-run"), "20261202T120000Z-ab12")
    new = write_run(tmp_path, fixture_json("single-trial"), "20261205T140000Z-0a1b")
    (tmp_path / "empty-dir").mkdir()
    os.utime(old / "results.json", (1_000_000, 1_000_000))
    os.utime(new / "results.json", (2_000_000, 2_000_000))
    assert latest_run(tmp_path) == new
    assert resolve_results(None, tmp_path) == new / "results.json"
    # A rewritten (e.g. resumed) run becomes the latest.
    os.utime(old / "results.json", (3_000_000, 3_000_000))
    assert latest_run(tmp_path) == old


def test_evidence_writes_what_was_recorded_only() -> None:
    assert Evidence().model_dump(mode="json", by_alias=True) == {}
    evidence = Evidence(target="pod", before=None)
    evidence.recreated.append("deployment")  # filled in place, as a run engine may do
    assert evidence.model_dump(mode="json", by_alias=True) == {
        "target": "pod",
        "before": None,
        "recreated": ["deployment"],
    }


def test_saved_files_are_readable_by_others(tmp_path: Path) -> None:
    path = save_results_json(load_results(fixture("single-trial")).to_json(), tmp_path)
    assert path.stat().st_mode & 0o777 == 0o644
    path.chmod(0o600)  # a mode the user chose is kept when the file is replaced
    save_results_json(load_results(fixture("single-trial")).to_json(), tmp_path)
    assert path.stat().st_mode & 0o777 == 0o600
