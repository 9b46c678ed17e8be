"""Running one chaostoolkit experiment inside a trial thread, with its injection timestamped.

chaoslib's own `Runner` plays the experiment (steady-state hypothesis, method, hypothesis again,
rollbacks) and produces the journal. Two adaptations, both through chaoslib's public classes:

- `Runner.run` installs SIGTERM/SIGUSR handlers, which Python allows only in the main thread;
  trials run in worker threads and the engine owns the signals, so `_ThreadRunner` plays the
  same `_run` without installing them.
- a `RunEventHandler` hears `activity_completed` for the injection activity the moment it
  returns, so the observer learns the injection instant live (the journal's `end` of that
  activity, the same value a reader finds later in the journal file).

Pauses have a deadline too: before chaoslib plays anything each pause, resolved with the
trial's configuration, must be in its range (`compare.run.validate.check_resolved_pauses`),
and the time between two activities (a pause after one, the pause before the next, the
controls between them) is watched like an activity's.
"""

from __future__ import annotations

import copy
import json
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaoslib.run import RunEventHandler, Runner
from chaoslib.types import Strategy

from compare.outputfile import write_text
from compare.run.validate import MAX_PAUSE_S, check_resolved_pauses


class _ThreadRunner(Runner):  # type: ignore[misc]
    def run(
        self,
        experiment: dict[str, Any],
        settings: dict[str, Any] | None = None,
        experiment_vars: Any = None,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        self.configure(experiment, settings, experiment_vars)
        # The values chaoslib will sleep, known only now (the environment, the trial's values).
        check_resolved_pauses(experiment, self.config or {}, self.secrets)
        result: dict[str, Any] = self._run(
            self.strategy,
            self.schedule,
            experiment,
            journal,
            self.config,
            self.secrets,
            self.settings,
            self.event_registry,
        )
        return result


class InjectionClock(RunEventHandler):  # type: ignore[misc]
    """Calls `on_injected(run)` when the activity named `activity` completes."""

    def __init__(self, activity: str, on_injected: Callable[[dict[str, Any]], None]) -> None:
        super().__init__()
        self.activity = activity
        self.on_injected = on_injected
        self.run: dict[str, Any] | None = None

    def activity_completed(self, activity: dict[str, Any], run: dict[str, Any]) -> None:
        if self.run is None and activity.get("name") == self.activity:
            self.run = run
            self.on_injected(run)


class ActivityTimedOut(Exception):
    """An activity ran past its deadline: the trial is `error`, naming it."""

    def __init__(
        self,
        activity: str,
        deadline: float,
        abandoned: bool,
        journal: dict[str, Any] | None = None,
    ) -> None:
        self.activity = activity
        self.journal = journal
        self.deadline = deadline
        self.abandoned = abandoned
        how = (
            "its thread is abandoned (a Python activity cannot be killed)"
            if abandoned
            else "its process was killed"
        )
        super().__init__(
            f"the activity {activity!r} did not finish within its deadline of {deadline:g} s"
            f" ({how}; set the activity's `timeout` to allow more)"
        )


class PauseTimedOut(ActivityTimedOut):
    """Nothing started for too long between two activities (a pause or a control hung)."""

    def __init__(self, after: str, deadline: float) -> None:
        super().__init__(after, deadline, abandoned=True)
        self.args = (
            f"no activity started within {deadline:g} s after {after} (its pauses and"
            " controls ran past their deadline; the experiment is abandoned)",
        )


class ExperimentCancelled(Exception):
    """The run was interrupted while chaoslib played the experiment."""


class ActivityWatch(RunEventHandler):  # type: ignore[misc]
    """Which activity is running, since when, and which ended past their deadline."""

    def __init__(self, deadlines: dict[str, float], gap: float = float("inf")) -> None:
        super().__init__()
        self.deadlines = deadlines
        self.lock = threading.Lock()
        self.current: tuple[str, float] | None = None
        self.late: list[str] = []
        # Between two activities (pauses, controls): since when, after what, and how long
        # it may last. From the start: the controls' set-up and the first pause.
        self.gap = gap
        self.between: tuple[str, float] | None = ("the experiment's start", time.monotonic())
        self.running = 0  # more than one with background activities

    def start_activity(self, activity: dict[str, Any]) -> None:
        with self.lock:
            self.current = (str(activity.get("name")), time.monotonic())
            self.between = None
            self.running += 1

    def activity_completed(self, activity: dict[str, Any], run: dict[str, Any]) -> None:
        with self.lock:
            name = str(activity.get("name"))
            if self.current is not None and self.current[0] == name:
                took = time.monotonic() - self.current[1]
                if took >= self.deadlines.get(name, float("inf")) or _killed(run):
                    self.late.append(name)
            self.current = None
            self.running = max(self.running - 1, 0)
            if not self.running:
                self.between = (f"the activity {name!r}", time.monotonic())

    def stalled(self) -> tuple[str, float] | None:
        """What the experiment is stuck after, when nothing started within the gap."""
        with self.lock:
            between = self.between
        if between is not None and time.monotonic() - between[1] > self.gap:
            return between[0], self.gap
        return None

    def overdue(self, grace: float) -> tuple[str, float] | None:
        """The running activity when it is `grace` seconds past its deadline."""
        with self.lock:
            if self.current is None:
                return None
            name, started = self.current
        deadline = self.deadlines.get(name)
        if deadline is not None and time.monotonic() - started > deadline + grace:
            return name, deadline
        return None


def _killed(run: dict[str, Any]) -> bool:
    return any(PROCESS_TIMEOUT in str(part) for part in run.get("exception") or [])


# chaoslib's own words when it killed a process activity at its provider `timeout`.
PROCESS_TIMEOUT = "process activity took too long to complete"
# Past the deadline, the time chaoslib gets to kill the process and record the failure itself
# before the trial gives up on the experiment.
KILL_GRACE_S = 5.0


def bound_activities(experiment: dict[str, Any], default: float) -> dict[str, float]:
    """Give every activity a deadline and return them by name.

    An activity's own chaostoolkit `timeout` wins: the provider's (process, http) or the
    activity's. Else `default`. Process and HTTP providers get the deadline as their provider
    `timeout`, so chaoslib itself kills the process / drops the request; a Python activity
    cannot be killed, the watch gives up on it instead (`run_experiment_in_thread`).
    """
    deadlines: dict[str, float] = {}
    hypothesis = experiment.get("steady-state-hypothesis")
    activities = (
        list((hypothesis or {}).get("probes") or []) if isinstance(hypothesis, dict) else []
    )
    for key in ("method", "rollbacks"):
        activities += [a for a in experiment.get(key) or [] if isinstance(a, dict)]
    for activity in activities:
        provider = activity.get("provider") if isinstance(activity, dict) else None
        if not isinstance(provider, dict):
            continue
        kind = provider.get("type")
        given = _seconds(provider.get("timeout")) if kind in ("process", "http") else None
        own = given if given is not None else _seconds(activity.get("timeout"))
        deadline = own if own is not None else default
        if kind == "process" or (kind == "http" and given is None):
            provider["timeout"] = deadline
        deadlines[str(activity.get("name"))] = max(
            deadlines.get(str(activity.get("name")), 0.0), deadline
        )
    return deadlines


def _seconds(value: Any) -> float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float) and 0 < value < float("inf"):
        return float(value)
    if (
        isinstance(value, list | tuple)
        and value
        and all(isinstance(v, int | float) and not isinstance(v, bool) and v > 0 for v in value)
    ):
        return float(sum(value))
    return None


# Between two activities: the pause after one and the pause before the next (each at most
# MAX_PAUSE_S, checked when the run starts), chaoslib's own steps and the controls.
GAP_DEADLINE_S = 2 * MAX_PAUSE_S + 60.0


def run_experiment_in_thread(
    experiment: dict[str, Any],
    handlers: list[RunEventHandler],
    *,
    default_deadline: float,
    cancel: threading.Event | None = None,
    gap: float = GAP_DEADLINE_S,
) -> dict[str, Any]:
    """Play `experiment` with chaoslib and return its journal.

    Every activity has a deadline (`bound_activities`). chaoslib plays the experiment in a
    thread of its own, watched: past an activity's deadline (plus the time chaoslib takes to
    kill a process) the watch raises ActivityTimedOut, and when `cancel` is set it returns at
    once (raising Cancelled in the caller's check): no activity can hang a trial or Ctrl-C.
    Between two activities at most `gap` seconds may pass (two pauses and the controls); past
    that the watch raises PauseTimedOut.
    An abandoned thread is a daemon: it never keeps the command alive.

    Settings are empty on purpose: a user's ~/.chaostoolkit/settings.yaml could add global
    controls to every trial and change what is measured.
    """
    document = inline_refs(experiment)
    watch = ActivityWatch(bound_activities(document, default_deadline), gap=gap)
    runner = _ThreadRunner(Strategy.DEFAULT)
    for handler in [watch, *handlers]:
        runner.register_event_handler(handler)
    outcome: dict[str, Any] = {}

    def play() -> None:
        try:
            outcome["journal"] = runner.run(document, settings={})
        except BaseException as exc:  # handed to the trial thread
            outcome["error"] = exc

    player = threading.Thread(target=play, name=f"{threading.current_thread().name}-chaos")
    player.daemon = True
    player.start()
    while player.is_alive():
        player.join(0.2)
        if cancel is not None and cancel.is_set():
            raise ExperimentCancelled
        late = watch.overdue(KILL_GRACE_S)
        if late is not None:
            raise ActivityTimedOut(late[0], late[1], abandoned=True)
        stalled = watch.stalled()
        if stalled is not None:
            raise PauseTimedOut(*stalled)
    if "error" in outcome:
        raise outcome["error"]
    journal: dict[str, Any] = outcome["journal"]
    if watch.late:
        name = watch.late[0]
        deadline = watch.deadlines.get(name, default_deadline)
        raise ActivityTimedOut(name, deadline, abandoned=False, journal=journal)
    return journal


def inline_refs(experiment: dict[str, Any]) -> dict[str, Any]:
    """Replace `{"ref": name}` activities by the activity they name.

    chaoslib resolves refs through a process-wide cache that `run_experiment` fills and clears
    around each run; parallel trials would clear each other's, so refs are resolved up front.
    """
    named: dict[str, Any] = {}
    for activity in (experiment.get("steady-state-hypothesis") or {}).get("probes") or []:
        if isinstance(activity, dict) and activity.get("name"):
            named[activity["name"]] = activity
    for activity in experiment.get("method") or []:
        if isinstance(activity, dict) and activity.get("name"):
            named[activity["name"]] = activity

    def resolve(items: list[Any]) -> list[Any]:
        return [
            copy.deepcopy(named[item["ref"]])
            if isinstance(item, dict) and "ref" in item and item["ref"] in named
            else item
            for item in items
        ]

    hypothesis = experiment.get("steady-state-hypothesis")
    if isinstance(hypothesis, dict) and hypothesis.get("probes"):
        hypothesis["probes"] = resolve(hypothesis["probes"])
    for key in ("method", "rollbacks"):
        if experiment.get(key):
            experiment[key] = resolve(experiment[key])
    return experiment


def epoch(timestamp: str) -> float:
    """A journal timestamp (ISO 8601, UTC) as time.time() seconds."""
    parsed = datetime.fromisoformat(timestamp)
    if parsed.tzinfo is None:  # older chaoslib wrote naive UTC
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()


# What a journal keeps of any one value an activity returned (stdout of a process, a probe's
# answer): enough to read what happened, never a disk filled by a chatty or runaway injection.
MAX_JOURNAL_STRING = 64 * 1024
MAX_JOURNAL_ITEMS = 1000
MAX_JOURNAL_DEPTH = 40


def cap_journal(value: Any, depth: int = 0) -> Any:
    """A copy of `value` with long strings, long lists and deep nesting cut (and said so)."""
    if isinstance(value, str):
        if len(value) <= MAX_JOURNAL_STRING:
            return value
        cut = len(value) - MAX_JOURNAL_STRING
        return f"{value[:MAX_JOURNAL_STRING]}... [compare: {cut} more characters not kept]"
    if isinstance(value, bytes):
        return cap_journal(value.decode("utf-8", "replace"), depth)
    if depth >= MAX_JOURNAL_DEPTH and isinstance(value, dict | list | tuple):
        return "[compare: nested too deeply, not kept]"
    if isinstance(value, dict):
        return {k: cap_journal(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        items = [cap_journal(v, depth + 1) for v in list(value)[:MAX_JOURNAL_ITEMS]]
        if len(value) > MAX_JOURNAL_ITEMS:
            items.append(f"[compare: {len(value) - MAX_JOURNAL_ITEMS} more items not kept]")
        return items
    return value


def write_journal(journal: dict[str, Any], path: Path) -> Path:
    """Write the journal as `chaos run` does (chaostoolkit's own JSON encoder), each value
    capped (`cap_journal`)."""
    from chaostoolkit import encoder  # type: ignore[import-untyped]

    text = json.dumps(cap_journal(journal), indent=2, ensure_ascii=False, default=encoder)
    return write_text(path, text + "\n")
