"""schemaVersion 3: each approach's settings under `settings.approachSettings`, as the
approach records them; version 2's two settings named after an approach migrate there."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from compare import approaches
from compare.errors import CompareError
from compare.results import RunResults, load_results, save_results_json, upgrade
from tests.results.helpers import fixture_json, write_run


def _v2(**settings: Any) -> dict[str, Any]:
    data = fixture_json("no-fault-and-flaps")
    assert data["schemaVersion"] == 2
    data["settings"].update(settings)
    return data


def test_v2_approach_settings_move_under_their_approach() -> None:
    data = _v2(fluxIntervalSeconds=7.5, argocdDiff="server-side")
    before = copy.deepcopy(data)
    results = RunResults.from_json(data)
    assert data == before  # the input is not modified
    assert results.schema_version == 4
    assert results.settings.approach_settings == {
        "flux": {"intervalSeconds": 7.5},
        "argocd": {"diff": "server-side"},
    }
    written = results.to_json()["settings"]
    assert "fluxIntervalSeconds" not in written and "argocdDiff" not in written


def test_the_migrated_settings_are_what_the_approaches_record_now() -> None:
    # The migration spells version 2's keys; the names under the approach must be those the
    # approach writes today, or a migrated run would report differently from a new one.
    upgraded = upgrade(_v2(fluxIntervalSeconds=5.0, argocdDiff="three-way"))
    moved = upgraded["settings"]["approachSettings"]
    for name, settings in moved.items():
        assert approaches.get(name).configured().run_settings().keys() == settings.keys()


def test_a_v2_run_without_them_has_no_approach_settings() -> None:
    results = RunResults.from_json(_v2())
    assert results.settings.approach_settings == {}
    # null was read as absent by version 2
    assert RunResults.from_json(_v2(fluxIntervalSeconds=None)).settings.approach_settings == {}


def test_a_v3_file_round_trips(tmp_path: Path) -> None:
    data = fixture_json("no-fault-and-flaps")
    data["schemaVersion"] = 3
    data["settings"]["approachSettings"] = {
        "flux": {"intervalSeconds": 2.0},
        "kustomize": {"prune": True, "path": "./deploy"},  # an approach not registered here
    }
    path = save_results_json(RunResults.from_json(data).to_json(), tmp_path / "run")
    # Read as version 4, which changes nothing but the version (schemaVersion 4 only added
    # optional keys).
    assert json.loads(path.read_text()) == {**data, "schemaVersion": 4}
    assert load_results(path).to_json() == {**data, "schemaVersion": 4}


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            lambda s: s.update(fluxIntervalSeconds=-1),
            "settings.fluxIntervalSeconds: must be a number > 0 (got -1)",
        ),
        (
            lambda s: s.update(fluxIntervalSeconds=True),
            "settings.fluxIntervalSeconds: must be a number > 0 (got True)",
        ),
        (
            lambda s: s.update(argocdDiff=""),
            "settings.argocdDiff: must be a non-empty string (got '')",
        ),
        (
            lambda s: s.update(approachSettings={}),
            "settings.approachSettings: unknown field in schemaVersion 2 (it is new in"
            " schemaVersion 3)",
        ),
    ],
)
def test_a_v2_file_version_2_rejected_is_rejected(tmp_path: Path, edit: Any, message: str) -> None:
    data = _v2()
    edit(data["settings"])
    with pytest.raises(CompareError) as err:
        load_results(write_run(tmp_path, data))
    assert err.value.message.endswith(message), err.value.message


def test_a_v3_file_with_the_v2_keys_is_rejected(tmp_path: Path) -> None:
    data = fixture_json("no-fault-and-flaps")
    data["schemaVersion"] = 3
    data["settings"]["fluxIntervalSeconds"] = 5.0
    with pytest.raises(CompareError, match=r"settings\.fluxIntervalSeconds: "):
        load_results(write_run(tmp_path, data))


def test_a_v1_file_is_upgraded_through_v2() -> None:
    upgraded = upgrade(fixture_json("single-trial"))
    assert upgraded["schemaVersion"] == 4
    assert upgraded["settings"]["approachSettings"] == {}
    assert upgraded["settings"]["settleSeconds"] == 0.0
