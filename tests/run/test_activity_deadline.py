"""Bounded activities: chaoslib plays real experiments (process and Python activities, no
cluster needed) and no activity can hang a trial - past its deadline the process is killed
(chaoslib's own provider `timeout`) or the Python activity abandoned, the caller gets
ActivityTimedOut naming it; a cancel returns at once; a process that exits non-zero is a
failed activity, never a fault made."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from compare.run.runner import (
    ActivityTimedOut,
    ExperimentCancelled,
    bound_activities,
    cap_journal,
    run_experiment_in_thread,
)
from compare.run.trial import _failed_before, _process_failure


def _process(name: str, path: str, arguments: Any, **provider: Any) -> dict[str, Any]:
    return {
        "type": "action",
        "name": name,
        "provider": {"type": "process", "path": path, "arguments": arguments, **provider},
    }


def _experiment(*method: dict[str, Any]) -> dict[str, Any]:
    return {"title": "t", "description": "d", "method": list(method)}


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_process_that_never_returns_is_killed_at_its_deadline(tmp_path: Any) -> None:
    marker = tmp_path / "pid"
    # `exec sleep` keeps the pid the shell wrote: that process is the one chaoslib must kill.
    hang = _process("hang", "sh", ["-c", f"echo $$ > {marker}; exec sleep 100000"])
    started = time.monotonic()
    with pytest.raises(ActivityTimedOut) as caught:
        run_experiment_in_thread(_experiment(hang), [], default_deadline=1.0)
    took = time.monotonic() - started
    assert took < 10, took
    assert caught.value.activity == "hang" and not caught.value.abandoned
    assert "'hang' did not finish within its deadline of 1 s" in str(caught.value)
    assert caught.value.journal is not None  # chaoslib finished: the journal is kept
    assert not _alive(int(marker.read_text()))


def test_the_activity_s_own_timeout_overrides_the_default() -> None:
    quick = _process("quick", "sleep", ["0.5"], timeout=0.1)
    with pytest.raises(ActivityTimedOut, match=r"deadline of 0\.1 s"):
        run_experiment_in_thread(_experiment(quick), [], default_deadline=60.0)
    slow_ok = _process("slow-ok", "sleep", ["1.2"], timeout=30)
    journal = run_experiment_in_thread(_experiment(slow_ok), [], default_deadline=0.5)
    assert journal["run"][0]["status"] == "succeeded"


def test_a_python_activity_that_hangs_is_abandoned_and_the_call_returns() -> None:
    stuck = {
        "type": "action",
        "name": "stuck",
        "provider": {
            "type": "python",
            "module": "tests.run.test_activity_deadline",
            "func": "block_forever",
        },
        "timeout": 0.5,  # chaostoolkit's activity-level timeout: the override for Python
    }
    started = time.monotonic()
    with pytest.raises(ActivityTimedOut) as caught:
        run_experiment_in_thread(_experiment(stuck), [], default_deadline=60.0)
    assert caught.value.abandoned and caught.value.activity == "stuck"
    assert time.monotonic() - started < 0.5 + 5.0 + 2.0


def test_a_cancel_returns_at_once() -> None:
    cancel = threading.Event()
    timer = threading.Timer(0.5, cancel.set)
    timer.start()
    started = time.monotonic()
    with pytest.raises(ExperimentCancelled):
        run_experiment_in_thread(
            _experiment(_process("long", "sleep", ["30"])),
            [],
            default_deadline=60.0,
            cancel=cancel,
        )
    assert time.monotonic() - started < 3


def test_a_process_injection_that_exits_non_zero_is_a_failure() -> None:
    fails = _process("inject", "sh", ["-c", "echo no such deployment >&2; exit 1"])
    journal = run_experiment_in_thread(_experiment(fails), [], default_deadline=10.0)
    (run,) = journal["run"]
    assert run["status"] == "succeeded"  # chaoslib's own view: why compare checks the code
    assert _process_failure(run) == "exited with status 1: no such deployment"
    setup = _process("setup", "false", [])
    journal = run_experiment_in_thread(
        _experiment(setup, _process("inject", "true", [])), [], default_deadline=10.0
    )
    failed = _failed_before(journal, "inject")
    assert failed is not None and failed["activity"]["name"] == "setup"
    ok = run_experiment_in_thread(
        _experiment(_process("inject", "true", [])), [], default_deadline=10.0
    )
    assert _process_failure(ok["run"][0]) is None


def test_bound_activities_gives_every_activity_a_deadline() -> None:
    doc: dict[str, Any] = {
        "steady-state-hypothesis": {
            "title": "h",
            "probes": [{"name": "p", "type": "probe", "provider": {"type": "python"}}],
        },
        "method": [
            _process("a", "true", []),
            _process("b", "true", [], timeout=3),
            {"name": "c", "type": "action", "provider": {"type": "http", "url": "x"}},
            {"name": "d", "type": "action", "timeout": 7, "provider": {"type": "python"}},
        ],
        "rollbacks": [_process("r", "true", [])],
    }
    deadlines = bound_activities(doc, 42.0)
    assert deadlines == {"p": 42.0, "a": 42.0, "b": 3.0, "c": 42.0, "d": 7.0, "r": 42.0}
    assert doc["method"][0]["provider"]["timeout"] == 42.0
    assert doc["method"][2]["provider"]["timeout"] == 42.0
    assert doc["rollbacks"][0]["provider"]["timeout"] == 42.0


def test_journal_values_are_capped() -> None:
    big = {"output": {"stdout": "x" * 1_000_000, "items": list(range(5000))}}
    capped = cap_journal(big)
    assert len(capped["output"]["stdout"]) < 70_000
    assert "more characters not kept" in capped["output"]["stdout"]
    assert len(capped["output"]["items"]) == 1001


def block_forever(seconds: float = 300.0) -> None:
    """A Python activity that does not return in any test's time (its thread is a daemon)."""
    time.sleep(seconds)
