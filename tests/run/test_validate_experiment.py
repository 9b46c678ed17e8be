"""An experiment is validated without importing anything of its own (a control's or a Python
activity's module runs only when a trial starts), and every number in it is in its range -
at validation, and again at run time with the trial's values (pauses resolved from the
environment; the time between two activities watched)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.errors import CompareError
from compare.paths import EXPERIMENTS_DIR
from compare.run.experiments import load_spec
from compare.run.runner import PauseTimedOut, run_experiment_in_thread
from compare.run.validate import MAX_PAUSE_S, check_resolved_pauses, nested_quantifier
from tests.results.helpers import fixture_json, write_run

MODULE = "compare_test_marker_module"


@pytest.fixture
def marker_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A module on sys.path whose import writes a marker file (and that is a control too)."""
    marker = tmp_path / "imported"
    code = tmp_path / "code"
    code.mkdir()
    (code / f"{MODULE}.py").write_text(
        f"from pathlib import Path\nPath({str(marker)!r}).write_text('imported')\n\n"
        "def act(configuration=None, secrets=None):\n    return 'acted'\n\n"
        "def before_activity_control(context, **kwargs):\n    pass\n"
    )
    monkeypatch.syspath_prepend(str(code))
    sys.modules.pop(MODULE, None)
    yield marker
    sys.modules.pop(MODULE, None)


def _experiment_with_marker_module() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    control = {"name": "mine", "provider": {"type": "python", "module": MODULE}}
    doc["controls"] = [control]
    doc["method"][0]["controls"] = [{"ref": "mine"}]
    doc["method"].insert(
        1,
        {
            "type": "action",
            "name": "my-own-step",
            "provider": {"type": "python", "module": MODULE, "func": "act"},
        },
    )
    return doc


def test_the_marker_module_writes_its_marker_when_imported(marker_module: Path) -> None:
    # The instrument of the tests below: importing the module does leave the marker.
    __import__(MODULE)
    assert marker_module.read_text() == "imported"


def test_validation_listing_and_check_import_nothing_of_the_file(
    marker_module: Path, tmp_path: Path
) -> None:
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(_experiment_with_marker_module()))
    spec = load_spec(str(path))
    assert spec.injection == "change-image"
    assert not marker_module.exists() and MODULE not in sys.modules

    runner = CliRunner()
    # `compare run` validates every experiment before it touches the cluster: it passes
    # validation and stops at the missing kubeconfig.
    args = ["run", "-e", str(path), "--output", str(tmp_path / "out")]
    result = runner.invoke(app, [*args, "--kubeconfig", str(tmp_path / "none")])
    assert result.exit_code == 2, result.output
    assert "mine.json" not in result.stderr and "kubeconfig" in result.stderr, result.stderr
    # A run that lists the file: check and report read results.json alone.
    data = fixture_json("single-trial")
    data["experiments"][0]["path"] = str(path)
    data["experiments"][0]["builtin"] = False
    run = write_run(tmp_path, data)
    for command in (["check", str(run)], ["report", str(run)]):
        result = runner.invoke(app, command)
        assert result.exit_code in (0, 1), result.output
    assert not marker_module.exists() and MODULE not in sys.modules


def test_the_control_and_the_module_are_resolved_when_the_run_starts(
    marker_module: Path,
) -> None:
    doc = {
        "title": "t",
        "description": "d",
        "controls": [{"name": "mine", "provider": {"type": "python", "module": MODULE}}],
        "method": [
            {
                "type": "action",
                "name": "my-own-step",
                "provider": {"type": "python", "module": MODULE, "func": "act"},
            }
        ],
    }
    journal = run_experiment_in_thread(doc, [], default_deadline=30.0)
    assert journal["run"][0]["output"] == "acted"
    assert marker_module.read_text() == "imported"


def test_a_user_module_that_does_not_exist_is_found_out_when_the_trial_runs(
    tmp_path: Path,
) -> None:
    doc = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    doc["method"][0]["provider"]["module"] = "no_such_module_anywhere"
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(doc))
    assert load_spec(str(path)).document["method"][0]["provider"]["module"] == (
        "no_such_module_anywhere"
    )


@pytest.mark.parametrize(
    ("pattern", "nested"),
    [
        ("(a+)+$", True),
        ("([a-z]+)*x", True),
        ("(?:x|y+)+$", True),
        ("(a{1,3})+", True),
        ("((ab)*c)*", True),
        ("^ok$", False),
        ("a+b+c*", False),
        ("(ab)*c", False),
        ("(a|b)*", False),
        ("x{2,5}", False),
    ],
)
def test_nested_quantifiers(pattern: str, nested: bool) -> None:
    assert nested_quantifier(pattern) is nested


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_an_infinite_timeout_in_yaml_is_refused(tmp_path: Path) -> None:
    import yaml

    doc = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    text = yaml.safe_dump(doc).replace("name: change-image", "name: change-image\n  timeout: .inf")
    path = _write(tmp_path, "mine.yaml", text)
    with pytest.raises(CompareError, match=r"mine\.yaml: method\[0\]\.timeout: inf is not a"):
        load_spec(str(path))


def test_a_pause_from_an_env_default_is_checked_with_its_type(tmp_path: Path) -> None:
    doc = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    doc["configuration"]["slow"] = {
        "type": "env",
        "key": "SLOW",
        "default": "700",
        "env_var_type": "float",
    }
    doc["method"][0]["pauses"] = {"after": "${slow}"}
    path = _write(tmp_path, "mine.json", json.dumps(doc))
    with pytest.raises(CompareError) as caught:
        load_spec(str(path))
    assert str(caught.value) == (
        f"{path}: method[0].pauses.after: 700 s is more than the maximum of 600 s"
    )
    doc["configuration"]["slow"]["default"] = "2.5"
    path.write_text(json.dumps(doc))
    assert load_spec(str(path)).document["method"][0]["pauses"] == {"after": "${slow}"}


def test_rollbacks_may_reuse_a_method_name_but_not_their_own(tmp_path: Path) -> None:
    doc = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    doc["rollbacks"] = [dict(doc["method"][0])]
    path = _write(tmp_path, "mine.json", json.dumps(doc))
    load_spec(str(path))
    doc["rollbacks"].append(dict(doc["method"][0]))
    path.write_text(json.dumps(doc))
    with pytest.raises(CompareError, match=r"rollbacks\[1\]\.name: 'change-image' is the name"):
        load_spec(str(path))


def _paused(after: Any, configuration: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "title": "t",
        "description": "d",
        "configuration": configuration or {},
        "method": [
            {
                "type": "action",
                "name": "quick",
                "provider": {"type": "process", "path": "true"},
                "pauses": {"after": after},
            }
        ],
    }


def test_a_pause_set_from_the_environment_at_run_time_is_refused_before_it_sleeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COMPARE_TEST_PAUSE", "100000")
    configuration = {"slow": {"type": "env", "key": "COMPARE_TEST_PAUSE", "env_var_type": "float"}}
    started = time.monotonic()
    with pytest.raises(CompareError) as caught:
        run_experiment_in_thread(_paused("${slow}", configuration), [], default_deadline=5.0)
    assert time.monotonic() - started < 5
    assert str(caught.value) == (
        "method[0].pauses.after: 100000 s is more than the maximum of 600 s"
    )


def test_resolved_pauses_must_be_numbers() -> None:
    with pytest.raises(CompareError, match=r"resolves to 'later', not a number"):
        check_resolved_pauses(_paused("${slow}"), {"slow": "later"}, None)
    check_resolved_pauses(_paused("${slow}"), {"slow": MAX_PAUSE_S}, None)


def test_the_time_between_two_activities_has_a_deadline() -> None:
    # A pause within its range, but longer than this watch's gap: the trial does not wait.
    started = time.monotonic()
    with pytest.raises(PauseTimedOut) as caught:
        run_experiment_in_thread(_paused(30), [], default_deadline=5.0, gap=1.0)
    assert time.monotonic() - started < 10
    assert str(caught.value).startswith("no activity started within 1 s after the activity")
    journal = run_experiment_in_thread(_paused(0.2), [], default_deadline=5.0, gap=5.0)
    assert journal["run"][0]["status"] == "succeeded"
