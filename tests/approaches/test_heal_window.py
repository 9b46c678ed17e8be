"""A heal window per approach: the user's `--heal-window` plus the approach's own cadence
(pure: no cluster). The run records it per approach in results.json and every report shows it
(the cluster test that a run records it: tests/deploy/flux/test_flux.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compare import approaches
from compare.approaches import Cadence, builtin_target, trial_window
from compare.errors import CompareError
from compare.report import ReportData
from compare.results import RunResults, load_results, summarize
from compare.results.model import ApproachWindow, RunSettings
from compare.run import RunRequest
from compare.run.app import App
from compare.run.engine import heal_windows
from compare.webapp import DEFAULT_APP, load_webapp
from tests.results.helpers import fixture, fixture_json


def test_the_cadence_is_added_to_the_users_window() -> None:
    assert trial_window(10.0, None) == 10.0
    assert trial_window(10.0, Cadence(5.25, "x")) == 15.25
    assert trial_window(3.0, Cadence(0.1 + 0.2, "x")) == 3.3  # rounded, not 3.3000000000000003


def test_an_exact_window_leaves_the_cadence_out() -> None:
    assert trial_window(10.0, Cadence(5.25, "x"), exact=True) == 10.0


def test_flux_waits_up_to_one_jittered_interval_the_others_have_no_cadence() -> None:
    flux = approaches.get("flux")
    assert flux.cadence() == Cadence(5.25, "HelmRelease interval 5 s + 5 % jitter")
    slow = flux.configured(interval=60.0).cadence()
    assert slow is not None and slow.seconds == 63.0
    argocd = approaches.get("argocd").cadence()
    assert argocd is not None and argocd.seconds == 2.0 and "self-heal backoff" in argocd.what
    assert approaches.get("helm").cadence() is None
    assert approaches.get("operator").cadence() is None


def _request(**changes: object) -> RunRequest:
    fields: dict[str, object] = {
        "approaches": ("helm", "operator", "flux", "argocd"),
        "experiments": (),
        "app": App(builtin_target(load_webapp(DEFAULT_APP), DEFAULT_APP)),
        "output_dir": Path("unused"),
        **changes,
    }
    return RunRequest(**fields)  # type: ignore[arg-type]


def test_each_approach_of_a_run_gets_its_own_window() -> None:
    windows = heal_windows(_request(settings={"flux": {"interval": 8.0}}))
    assert {n: w.heal_window_seconds for n, w in windows.items()} == {
        "helm": 10.0,
        "operator": 10.0,
        "flux": 18.4,
        "argocd": 12.0,
    }
    assert windows["flux"] == ApproachWindow(
        heal_window_seconds=18.4,
        cadence_seconds=8.4,
        cadence="HelmRelease interval 8 s + 5 % jitter",
        cadence_added=True,
    )
    assert windows["helm"] == ApproachWindow(heal_window_seconds=10.0)


def test_an_exact_run_records_the_cadence_it_did_not_add() -> None:
    windows = heal_windows(_request(heal_window=7.0, exact_heal_window=True))
    assert {w.heal_window_seconds for w in windows.values()} == {7.0}
    assert windows["flux"].cadence_seconds == 5.25 and not windows["flux"].cadence_added


def test_flux_settings_are_checked_against_its_own_window() -> None:
    """A 12 s interval fits the default 10 s window once its cadence is added; with the exact
    window it cannot be measured (a usage error, as before)."""
    flux = approaches.get("flux").configured(interval=12.0)
    for exact, fits in ((False, True), (True, False)):
        request = _request(settings={"flux": {"interval": 12.0}}, exact_heal_window=exact)
        window = heal_windows(request)["flux"].heal_window_seconds
        if fits:
            flux.check_settings(window)
        else:
            with pytest.raises(CompareError, match="must be shorter than the heal window"):
                flux.check_settings(window)


def test_results_json_records_the_windows_only_when_there_are_some() -> None:
    settings = RunSettings(
        approaches=["flux"],
        experiments=["image-change"],
        trials=1,
        heal_window_seconds=10.0,
        heal_windows=heal_windows(_request(approaches=("flux",))),
    )
    data = settings.model_dump(mode="json", by_alias=True)
    assert data["healWindows"] == {
        "flux": {
            "healWindowSeconds": 15.25,
            "cadenceSeconds": 5.25,
            "cadence": "HelmRelease interval 5 s + 5 % jitter",
            "cadenceAdded": True,
        }
    }
    assert RunSettings.model_validate(data) == settings
    bare = settings.model_copy(update={"heal_windows": None})
    assert "healWindows" not in bare.model_dump(mode="json", by_alias=True)


def _report(heal_windows_json: dict[str, Any] | None) -> ReportData:
    data = fixture_json("full-run")
    if heal_windows_json is not None:
        data["settings"]["healWindows"] = heal_windows_json
    results = RunResults.from_json(data)  # a version 2 file, upgraded
    return ReportData(summarize(results), fixture("full-run"), None, None)


def test_the_report_says_which_approach_had_a_longer_window_and_why() -> None:
    windows = heal_windows(_request(approaches=("helm", "operator", "flux")))
    dumped = {n: w.model_dump(mode="json", by_alias=True) for n, w in windows.items()}
    line = _report(dumped).settings_line()
    assert "heal window 10 s (flux 15.25 s: + HelmRelease interval 5 s + 5 % jitter);" in line
    exact = heal_windows(_request(approaches=("flux",), exact_heal_window=True))
    line = _report(
        {n: w.model_dump(mode="json", by_alias=True) for n, w in exact.items()}
    ).settings_line()
    assert "(flux exact, its HelmRelease interval 5 s + 5 % jitter not added)" in line
    # A file written before the field: the one window, as before.
    assert "heal window 10 s;" in _report(None).settings_line()
    assert load_results(fixture("full-run")).settings.heal_windows is None
