"""schemaVersion 2: no-fault, first vs settled heal, the typed evidence keys, the v1 migration."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from compare.errors import EXIT_USAGE, CompareError
from compare.results import (
    SCHEMA_VERSION,
    STATUSES,
    CrossCheck,
    FaultSeen,
    Flap,
    RunResults,
    chaos_agrees,
    load_results,
    save_results_json,
    upgrade,
)
from tests.results.helpers import V1_NAMES, V2_NAMES, as_v4, fixture, fixture_json, write_run


def _trial(data: dict[str, Any], experiment: str, approach: str, n: int) -> dict[str, Any]:
    found: dict[str, Any] = next(
        t
        for t in data["trials"]
        if (t["experiment"], t["approach"], t["trial"]) == (experiment, approach, n)
    )
    return found


def test_statuses_include_no_fault() -> None:
    assert STATUSES == ("healed", "not-healed", "no-fault", "error")


# --- the version 2 fixture -------------------------------------------------------------------


def test_v2_fixture_has_every_new_field() -> None:
    results = load_results(fixture("no-fault-and-flaps"))
    s = results.settings
    assert (s.poll_interval_seconds, s.settle_seconds, s.recheck_interval_seconds) == (
        None,
        1.0,
        2.0,
    )
    statuses = {t.status for t in results.trials}
    assert statuses == {"healed", "not-healed", "no-fault"}
    flapped = _one(results, "image-change", "operator", 1)
    assert (flapped.time_to_first_heal_seconds, flapped.time_to_heal_seconds) == (0.118, 0.552)
    assert flapped.evidence.flaps == [
        Flap(
            healed_at_seconds=0.118,
            drifted_at_seconds=0.301,
            detail=flapped.evidence.flaps[0].detail,
        )
    ]
    assert isinstance(flapped.evidence.fault_seen, FaultSeen)
    assert flapped.evidence.fault_seen.how == "event"
    never_settled = _one(results, "service-port-change", "operator", 1)
    assert never_settled.status == "not-healed"
    assert never_settled.time_to_heal_seconds is None
    assert never_settled.time_to_first_heal_seconds == 0.092
    assert len(never_settled.evidence.flaps) == 2
    disagrees = _one(results, "env-add", "operator", 2)
    assert (disagrees.evidence.chaos_verdict, disagrees.evidence.chaos_agrees) == (
        "deviated",
        False,
    )
    assert disagrees.chaos_disagrees
    cross = _one(results, "service-port-change", "helm", 1).evidence.cross_check
    assert isinstance(cross, CrossCheck)
    assert cross.reads == 5 and len(cross.disagreements) == 1
    no_fault = _one(results, "annotation-add", "helm", 1)
    assert no_fault.status == "no-fault"
    assert no_fault.time_to_heal_seconds is None
    assert no_fault.time_to_first_heal_seconds is None
    assert no_fault.evidence.fault_seen is None
    # Keys the schema does not type stay extra and are kept.
    assert no_fault.evidence.model_extra == {
        "injection": "add-annotation",
        "injectionOutput": {"changed": False},
    }
    # Watched: no poll resolution anywhere.
    assert all(t.poll_resolution_seconds is None for t in results.trials)


def _one(results: RunResults, experiment: str, approach: str, n: int) -> Any:
    return next(t for t in results.trials_of(experiment, approach) if t.trial == n)


@pytest.mark.parametrize("name", V2_NAMES)
def test_recorded_chaos_agreement_matches_the_rule(name: str) -> None:
    for t in load_results(fixture(name)).trials:
        if t.evidence.chaos_agrees is not None:
            assert t.evidence.chaos_agrees == chaos_agrees(t.status, t.evidence.chaos_verdict)


def test_chaos_agreement_rule() -> None:
    assert chaos_agrees("healed", "completed") is True
    assert chaos_agrees("healed", "deviated") is False
    assert chaos_agrees("not-healed", "deviated") is True
    assert chaos_agrees("not-healed", "failed") is True
    assert chaos_agrees("not-healed", "completed") is False
    assert chaos_agrees("no-fault", "completed") is True
    assert chaos_agrees("no-fault", "deviated") is False
    assert chaos_agrees("healed", "aborted") is False
    assert chaos_agrees("error", "failed") is None
    assert chaos_agrees("healed", None) is None


def test_v2_round_trip_through_save(tmp_path: Path) -> None:
    results = load_results(fixture("no-fault-and-flaps"))
    path = save_results_json(results.to_json(), tmp_path / "run")
    # Saved as the current version, the version 2 content unchanged.
    assert json.loads(path.read_text()) == as_v4(fixture_json("no-fault-and-flaps"))
    assert load_results(path) == results


def test_first_heal_rules_that_hold() -> None:
    data = fixture_json("no-fault-and-flaps")
    healed = _trial(data, "pod-delete-one", "helm", 1)
    healed["timeToFirstHealSeconds"] = healed["timeToHealSeconds"]  # equal is allowed
    healed_unknown = _trial(data, "pod-delete-one", "helm", 2)
    healed_unknown["timeToFirstHealSeconds"] = None  # not recorded (e.g. an upgraded v1 file)
    flapping = _trial(data, "image-change", "helm", 1)
    flapping["timeToFirstHealSeconds"] = 4.2  # not healed, but it came back for a moment
    results = RunResults.from_json(data)
    assert _one(results, "image-change", "helm", 1).time_to_first_heal_seconds == 4.2


def _edit(experiment: str, approach: str, n: int, **changes: Any) -> Any:
    def apply(data: dict[str, Any]) -> None:
        trial = _trial(data, experiment, approach, n)
        for key, value in changes.items():
            if key.startswith("ev_"):
                trial["evidence"][key[3:]] = value
            else:
                trial[key] = value

    return apply


BAD: list[tuple[str, Any, str]] = [
    (
        "first-after-settled",
        _edit("image-change", "operator", 1, timeToFirstHealSeconds=0.6),
        "timeToFirstHealSeconds (0.6) is after timeToHealSeconds (0.552): the first heal"
        " cannot follow the settled one",
    ),
    (
        "first-on-no-fault",
        _edit("annotation-add", "helm", 1, timeToFirstHealSeconds=0.1),
        "timeToFirstHealSeconds must be null when status is 'no-fault' (no heal can be seen)",
    ),
    (
        "no-fault-with-settled-heal",
        _edit("annotation-add", "helm", 1, timeToHealSeconds=0.1),
        "timeToHealSeconds must be null when status is 'no-fault'",
    ),
    (
        "first-on-error",
        _edit(
            "annotation-add", "helm", 1, status="error", error="boom", timeToFirstHealSeconds=0.1
        ),
        "timeToFirstHealSeconds must be null when status is 'error'",
    ),
    (
        "negative-first",
        _edit("pod-delete-one", "helm", 1, timeToFirstHealSeconds=-0.1),
        "timeToFirstHealSeconds: Input should be greater than or equal to 0",
    ),
    (
        "flap-backwards",
        _edit(
            "image-change",
            "operator",
            1,
            ev_flaps=[{"healedAtSeconds": 0.3, "driftedAtSeconds": 0.1, "detail": ""}],
        ),
        "evidence.flaps[0]: driftedAtSeconds must not be before healedAtSeconds",
    ),
    (
        "flap-unknown-key",
        _edit(
            "image-change",
            "operator",
            1,
            ev_flaps=[{"healedAtSeconds": 0.1, "driftedAtSeconds": 0.3, "when": 1}],
        ),
        "evidence.flaps[0].when: unknown field",
    ),
    (
        "fault-seen-how",
        _edit(
            "image-change",
            "operator",
            1,
            ev_faultSeen={"how": "poll", "atSeconds": 0.0, "detail": ""},
        ),
        "evidence.faultSeen.how: Input should be 'event', 'reading' or 'injection-output'",
    ),
    (
        "fault-seen-negative",
        _edit("image-change", "operator", 1, ev_faultSeen={"how": "event", "atSeconds": -1}),
        "evidence.faultSeen.atSeconds: Input should be greater than or equal to 0",
    ),
    (
        "cross-check-reads",
        _edit("image-change", "operator", 1, ev_crossCheck={"reads": -1}),
        "evidence.crossCheck.reads: Input should be greater than or equal to 0",
    ),
    (
        "chaos-agrees-type",
        _edit("image-change", "operator", 1, ev_chaosAgrees="yes"),
        "evidence.chaosAgrees: Input should be a valid boolean",
    ),
    (
        "settle-negative",
        lambda d: d["settings"].update(settleSeconds=-1),
        "settings.settleSeconds: Input should be greater than or equal to 0",
    ),
    (
        "recheck-zero",
        lambda d: d["settings"].update(recheckIntervalSeconds=0),
        "settings.recheckIntervalSeconds: Input should be greater than 0",
    ),
    (
        "poll-zero",
        lambda d: d["settings"].update(pollIntervalSeconds=0),
        "settings.pollIntervalSeconds: Input should be greater than 0",
    ),
    (
        "bad-no-fault-spelling",
        _edit("annotation-add", "helm", 1, status="no_fault"),
        "status: Input should be 'healed', 'not-healed', 'no-fault' or 'error'",
    ),
]


@pytest.mark.parametrize(("case", "edit", "message"), BAD, ids=[b[0] for b in BAD])
def test_inconsistent_v2_files_are_rejected(
    tmp_path: Path, case: str, edit: Any, message: str
) -> None:
    data = fixture_json("no-fault-and-flaps")
    edit(data)
    run = write_run(tmp_path, data)
    with pytest.raises(CompareError) as caught:
        load_results(run)
    text = str(caught.value)
    assert text.startswith(f"{run / 'results.json'}: trials[") or "settings." in text, text
    assert message in text
    assert "\n" not in text
    assert caught.value.exit_code == EXIT_USAGE


def test_settings_defaults() -> None:
    data = fixture_json("no-fault-and-flaps")
    for key in ("pollIntervalSeconds", "settleSeconds", "recheckIntervalSeconds"):
        del data["settings"][key]
    s = RunResults.from_json(data).settings
    assert (s.poll_interval_seconds, s.settle_seconds, s.recheck_interval_seconds) == (
        None,
        1.0,
        None,
    )


# --- migration from schemaVersion 1 ----------------------------------------------------------


@pytest.mark.parametrize("name", V1_NAMES)
def test_v1_fixture_is_kept_as_version_1(name: str) -> None:
    original = json.loads(fixture(name).read_text())
    assert original["schemaVersion"] == 1
    assert "settleSeconds" not in original["settings"]
    assert all("timeToFirstHealSeconds" not in t for t in original["trials"])


@pytest.mark.parametrize("name", V1_NAMES)
def test_v1_file_loads_upgraded(name: str) -> None:
    original = json.loads(fixture(name).read_text())
    results = load_results(fixture(name))
    assert results.schema_version == SCHEMA_VERSION == 4
    s = results.settings
    assert s.poll_interval_seconds == original["settings"]["pollIntervalSeconds"]  # kept
    assert s.settle_seconds == 0.0  # v1 counted the first reading that saw the desired state
    assert s.recheck_interval_seconds is None
    by_key = {(t["experiment"], t["approach"], t["trial"]): t for t in original["trials"]}
    for t in results.trials:
        old = by_key[t.key]
        assert t.status == old["status"]
        assert t.time_to_heal_seconds == old["timeToHealSeconds"]
        assert t.poll_resolution_seconds == old["pollResolutionSeconds"]
        assert t.time_to_first_heal_seconds is None
        assert t.evidence.fault_seen is None and t.evidence.flaps == []
        assert t.evidence.chaos_agrees is None
    # Everything else is exactly what the file says: the upgrade only adds.
    expected = copy.deepcopy(original)
    expected["schemaVersion"] = 2
    expected["settings"].update(settleSeconds=0.0, recheckIntervalSeconds=None)
    for trial in expected["trials"]:
        trial["timeToFirstHealSeconds"] = None
    assert results.to_json() == as_v4(expected)  # then on to versions 3 and 4


def test_v1_chaos_verdict_becomes_the_typed_field() -> None:
    results = load_results(fixture("recorded-helm"))
    verdicts = {t.evidence.chaos_verdict for t in results.trials}
    assert verdicts == {"completed", "deviated"}
    assert all(not t.chaos_disagrees for t in results.trials)  # v1 did not record agreement


def test_saving_an_upgraded_file_writes_the_current_version(tmp_path: Path) -> None:
    results = load_results(fixture("single-trial"))
    path = save_results_json(results.to_json(), tmp_path)
    written = json.loads(path.read_text())
    assert written["schemaVersion"] == SCHEMA_VERSION == 4
    assert written["settings"]["settleSeconds"] == 0.0
    assert load_results(path) == results
    # The v1 source is untouched.
    assert json.loads(fixture("single-trial").read_text())["schemaVersion"] == 1


def test_upgrade_does_not_modify_its_input() -> None:
    data = fixture_json("single-trial")
    before = copy.deepcopy(data)
    upgraded = upgrade(data)
    assert data == before
    assert upgraded["schemaVersion"] == 4
    assert upgrade(upgraded) is upgraded  # a current document is returned as it is


V1_BAD: list[tuple[str, Any, str]] = [
    (
        "no-fault-in-v1",
        lambda d: d["trials"][1].update(status="no-fault", timeToHealSeconds=None),
        "trials[1].status: 'no-fault' is not a schemaVersion 1 status (healed, not-healed,"
        " error); no-fault is new in schemaVersion 2",
    ),
    (
        "first-heal-in-v1",
        lambda d: d["trials"][0].update(timeToFirstHealSeconds=0.1),
        "trials[0].timeToFirstHealSeconds: unknown field in schemaVersion 1 (it is new in"
        " schemaVersion 2)",
    ),
    (
        "settle-in-v1",
        lambda d: d["settings"].update(settleSeconds=1.0),
        "settings.settleSeconds: unknown field in schemaVersion 1",
    ),
    (
        "recheck-in-v1",
        lambda d: d["settings"].update(recheckIntervalSeconds=2.0),
        "settings.recheckIntervalSeconds: unknown field in schemaVersion 1",
    ),
    (
        "no-poll-interval-in-v1",
        lambda d: d["settings"].pop("pollIntervalSeconds"),
        "settings.pollIntervalSeconds: required field is missing (schemaVersion 1)",
    ),
    (
        "null-poll-interval-in-v1",
        lambda d: d["settings"].update(pollIntervalSeconds=None),
        "settings.pollIntervalSeconds: must be a number in schemaVersion 1 (got null)",
    ),
    (
        "bad-status-in-v1",
        lambda d: d["trials"][0].update(status="ok"),
        "trials[0].status: 'ok' is not a schemaVersion 1 status",
    ),
    (
        "other-errors-still-named",
        lambda d: d["trials"][0].update(timeToHealSeconds=None),
        "trials[0]: a healed trial needs timeToHealSeconds",
    ),
]


@pytest.mark.parametrize(("case", "edit", "message"), V1_BAD, ids=[b[0] for b in V1_BAD])
def test_v1_files_using_v2_features_are_rejected(
    tmp_path: Path, case: str, edit: Any, message: str
) -> None:
    data = fixture_json("single-trial")
    edit(data)
    run = write_run(tmp_path, data)
    with pytest.raises(CompareError) as caught:
        load_results(run)
    text = str(caught.value)
    assert text.startswith(f"{run / 'results.json'}: "), text
    assert message in text
    assert "\n" not in text
