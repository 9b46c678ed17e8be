"""Running one chaostoolkit experiment inside a trial thread, with its injection timestamped.

chaoslib's own `Runner` plays the experiment (steady-state hypothesis, method, hypothesis again,
rollbacks) and produces the journal. Two adaptations, both through chaoslib's public classes:

- `Runner.run` installs SIGTERM/SIGUSR handlers, which Python allows only in the main thread;
  trials run in worker threads and the engine owns the signals, so `_ThreadRunner` plays the
  same `_run` without installing them.
- a `RunEventHandler` hears `activity_completed` for the injection activity the moment it
  returns, so the observer learns the injection instant live (the journal's `end` of that
  activity, the same value a reader finds later in the journal file).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from chaoslib.run import RunEventHandler, Runner
from chaoslib.types import Strategy

from compare.results import write_text_atomic


class _ThreadRunner(Runner):  # type: ignore[misc]
    def run(
        self,
        experiment: dict[str, Any],
        settings: dict[str, Any] | None = None,
        experiment_vars: Any = None,
        journal: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        self.configure(experiment, settings, experiment_vars)
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


def run_experiment_in_thread(
    experiment: dict[str, Any], handlers: list[RunEventHandler]
) -> dict[str, Any]:
    """Play `experiment` with chaoslib and return its journal.

    Settings are empty on purpose: a user's ~/.chaostoolkit/settings.yaml could add global
    controls to every trial and change what is measured.
    """
    runner = _ThreadRunner(Strategy.DEFAULT)
    for handler in handlers:
        runner.register_event_handler(handler)
    return runner.run(inline_refs(experiment), settings={})


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


def write_journal(journal: dict[str, Any], path: Path) -> Path:
    """Write the journal as `chaos run` does (chaostoolkit's own JSON encoder)."""
    from chaostoolkit import encoder  # type: ignore[import-untyped]

    text = json.dumps(journal, indent=2, ensure_ascii=False, default=encoder)
    return write_text_atomic(path, text + "\n")
