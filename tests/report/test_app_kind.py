"""The reports' header names the app by what it is: its custom resource's kind (a target's
operator arm: `Cache cache`, not `WebApp cache`), the built-in WebApp, or a target of charts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compare.approaches import builtin_target, load_target
from compare.report import ReportData, ReportFormat, render
from compare.results import RunResults, summarize
from compare.run.app import App
from compare.webapp import DEFAULT_APP, load_webapp
from tests.results.helpers import fixture, fixture_json

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _settings_line(app: dict[str, Any], target: dict[str, Any] | None) -> str:
    data = RunResults.from_json(fixture_json("with-errors")).to_json()
    data["app"] = app
    if target is not None:
        data["target"] = target
    summary = summarize(RunResults.from_json(data))
    return ReportData(summary, fixture("with-errors")).settings_line()


def test_an_operator_target_is_named_by_its_resources_kind() -> None:
    info = App(load_target(FIXTURES / "operators" / "cache" / "compare.yaml")).info()
    assert (info.name, info.kind) == ("cache", "Cache")
    target = {"name": "cache", "file": "compare.yaml"}
    line = _settings_line(info.model_dump(by_alias=True), target)
    assert line.startswith("Cache cache; ")


def test_the_built_in_app_is_a_webapp_and_older_files_read_so() -> None:
    info = App(builtin_target(load_webapp(DEFAULT_APP), DEFAULT_APP)).info()
    assert info.kind == "WebApp"
    dumped = info.model_dump(by_alias=True)
    assert _settings_line(dumped, None).startswith(f"WebApp {info.name} (")
    del dumped["kind"]  # a file written before the kind was recorded
    assert _settings_line(dumped, None).startswith(f"WebApp {info.name} (")


def test_a_target_of_charts_alone_is_an_app() -> None:
    info = App(load_target(EXAMPLES / "target-operator-chart.yaml")).info()
    assert info.kind is None
    assert "kind" not in info.model_dump(by_alias=True)  # absent, never null
    line = _settings_line(info.model_dump(by_alias=True), {"name": info.name, "file": "x"})
    assert line.startswith(f"app {info.name}; ")


def test_every_format_shows_the_kind() -> None:
    data = RunResults.from_json(fixture_json("with-errors")).to_json()
    data["app"] = {"name": "memcached", "spec": {}, "kind": "Memcached"}
    data["target"] = {"name": "memcached", "file": "target.yaml"}
    report = ReportData(summarize(RunResults.from_json(data)), fixture("with-errors"))
    for fmt in (ReportFormat.table, ReportFormat.md, ReportFormat.html):
        text = render(fmt, report)
        assert "Memcached memcached; " in text
        assert "WebApp memcached" not in text
