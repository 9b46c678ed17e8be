"""Aggregates over trials: one `Cell` per (fault, approach), one verdict per approach.

Reports and policy checks both read these, so "healed", "p95" and "median" mean the same thing
in every format and in `compare check`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from compare.results.model import ExperimentInfo, RunResults, TrialResult
from compare.results.writers import by_kubernetes

# healed / not-healed / no-fault / error: every recorded trial agrees; mixed: they do not;
# missing: planned but no trial recorded (interrupted run); n/a: fault not for this approach
# (shown as skipped, with its reason: `Cell.skip_reason`).
# no-fault is never a heal: the injection changed nothing, so the fault was not exercised.
HealAuthor = Literal["approach", "kubernetes"]
Outcome = Literal["healed", "not-healed", "no-fault", "error", "mixed", "missing", "n/a"]
Statistic = Literal["p50", "p95", "max"]

NO_FAULT_TEXT = "no fault seen (the injection changed nothing)"


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default; `inclusive` quantiles)."""
    if not values:
        raise ValueError("percentile of no values")
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100
    low, high = math.floor(pos), math.ceil(pos)
    return ordered[low] + (ordered[high] - ordered[low]) * (pos - low)


@dataclass(frozen=True)
class Times:
    """Distribution of a duration over trials, in seconds."""

    count: int
    min: float
    p50: float
    p95: float
    max: float
    mean: float

    @classmethod
    def of(cls, values: Sequence[float]) -> Times | None:
        if not values:
            return None
        return cls(
            count=len(values),
            min=min(values),
            p50=percentile(values, 50),
            p95=percentile(values, 95),
            max=max(values),
            mean=statistics.fmean(values),
        )

    def get(self, statistic: Statistic) -> float:
        return {"p50": self.p50, "p95": self.p95, "max": self.max}[statistic]


@dataclass(frozen=True)
class Cell:
    """The trials of one fault under one approach, and what they add up to."""

    experiment: ExperimentInfo
    approach: str
    applicable: bool
    planned: int
    trials: tuple[TrialResult, ...]

    def _count(self, status: str) -> int:
        return sum(1 for t in self.trials if t.status == status)

    @property
    def kind(self) -> str | None:
        """The kind of object the fault acts on, as its trials record it (`pod`, `deployment`,
        ...); None when no trial recorded one."""
        return next((t.evidence.target for t in self.trials if t.evidence.target), None)

    @property
    def recorded(self) -> int:
        return len(self.trials)

    @property
    def healed(self) -> int:
        return self._count("healed")

    @property
    def not_healed(self) -> int:
        return self._count("not-healed")

    @property
    def no_fault(self) -> int:
        """Trials whose injection changed nothing the judge checks (never a heal)."""
        return self._count("no-fault")

    @property
    def errors(self) -> int:
        return self._count("error")

    @property
    def flapped(self) -> int:
        """Trials in which the desired state came back and went again at least once."""
        return sum(1 for t in self.trials if t.flapped)

    @property
    def healed_briefly(self) -> int:
        """Not-healed trials that did see the desired state, but it never settled."""
        return sum(
            1
            for t in self.trials
            if t.status == "not-healed" and (t.time_to_first_heal_seconds is not None or t.flapped)
        )

    @property
    def healed_by(self) -> list[str]:
        """Who wrote the heals of the healed trials (field managers, first seen first)."""
        return list(dict.fromkeys(m for t in self.trials for m in t.evidence.healed_by))

    @property
    def heal_author(self) -> HealAuthor | None:
        """`kubernetes` when Kubernetes' own controllers alone wrote every heal of the cell,
        `approach` when the approach's did, None when the trials do not record it."""
        healed = [t for t in self.trials if t.status == "healed"]
        if not healed or any(not t.evidence.healed_by for t in healed):
            return None
        return "kubernetes" if by_kubernetes(self.healed_by) else "approach"

    @property
    def missing_trials(self) -> int:
        """Planned trials without a result (a partial or interrupted run)."""
        return max(self.planned - self.recorded, 0)

    @property
    def heal_times(self) -> Times | None:
        """The settled times to heal of the healed trials."""
        values = [t.time_to_heal_seconds for t in self.trials]
        return Times.of([v for v in values if v is not None])

    @property
    def first_heal_times(self) -> Times | None:
        """The first times the desired state held, over every trial that saw one."""
        values = [t.time_to_first_heal_seconds for t in self.trials]
        return Times.of([v for v in values if v is not None])

    @property
    def detect_times(self) -> Times | None:
        values = [t.time_to_detect_seconds for t in self.trials]
        return Times.of([v for v in values if v is not None])

    @property
    def window_seconds(self) -> float:
        return max((t.heal_window_seconds for t in self.trials), default=0.0)

    @property
    def error_messages(self) -> list[str]:
        return [f"trial {t.trial}: {t.error}" for t in self.trials if t.status == "error"]

    @property
    def skip_reason(self) -> str | None:
        """Why a cell without trials is not planned (None: it is): the reason the run
        recorded (`experiments[].skippedFor`), else, in a file written before it, what the
        experiment's approaches say."""
        if self.applicable:
            return None
        recorded = (self.experiment.skipped_for or {}).get(self.approach)
        if recorded:
            return recorded
        return (
            f"not planned for {self.approach} (the experiment applies to"
            f" {', '.join(self.experiment.approaches) or 'no approach of this run'})"
        )

    @property
    def outcome(self) -> Outcome:
        if not self.applicable:
            return "n/a"
        if not self.trials:
            return "missing"
        statuses = {t.status for t in self.trials}
        if len(statuses) > 1:
            return "mixed"
        return next(iter(statuses))


@dataclass(frozen=True)
class ApproachVerdict:
    """How one approach fared over all faults that apply to it.

    A fault counts as healed only when every trial healed; a no-fault cell (the injection
    changed nothing) is counted apart, never as healed.
    """

    approach: str
    faults: int
    healed: int
    not_healed: int
    mixed: int
    errors: int
    missing: int
    median_seconds: float | None
    no_fault: int = 0
    # Of the healed faults, those whose heals Kubernetes' own controllers wrote, and those
    # the approach's did (neither: results that do not record who healed).
    by_kubernetes: int = 0
    by_approach: int = 0

    @property
    def text(self) -> str:
        """`operator healed 11/11 faults, median 0.40 s` plus what else happened."""
        line = f"{self.approach} healed {self.healed}/{self.faults} faults"
        if self.by_kubernetes or self.by_approach:
            line += (
                f" ({self.by_approach} by the approach, {self.by_kubernetes} by Kubernetes itself)"
            )
        if self.median_seconds is not None:
            line += f", median {seconds(self.median_seconds)}"
        others = [
            (self.not_healed, "not healed"),
            (self.no_fault, "no fault seen (the injection changed nothing)"),
            (self.mixed, "mixed"),
            (self.errors, "error" if self.errors == 1 else "errors"),
            (self.missing, "not run"),
        ]
        rest = ", ".join(f"{n} {label}" for n, label in others if n)
        return f"{line}; {rest}" if rest else line


@dataclass(frozen=True)
class RunSummary:
    """Cells and verdicts of one run, in the run's fault and approach order."""

    results: RunResults
    faults: list[ExperimentInfo]
    approaches: list[str]
    cells: dict[tuple[str, str], Cell] = field(repr=False)
    verdicts: dict[str, ApproachVerdict]

    def cell(self, experiment: str, approach: str) -> Cell | None:
        return self.cells.get((experiment, approach))

    @property
    def planned_trials(self) -> int:
        return sum(c.planned for c in self.cells.values())

    @property
    def recorded_trials(self) -> int:
        return len(self.results.trials)

    def _in_order(self, trials: list[TrialResult]) -> list[TrialResult]:
        order = {(f.name, a): i for i, (f, a) in enumerate(_pairs(self.faults, self.approaches))}
        return sorted(trials, key=lambda t: (order.get((t.experiment, t.approach), 0), t.trial))

    @property
    def chaos_disagreements(self) -> list[TrialResult]:
        """Trials whose chaostoolkit verdict was recorded as disagreeing with ours."""
        return self._in_order([t for t in self.results.trials if t.chaos_disagrees])

    @property
    def no_fault_trials(self) -> list[TrialResult]:
        return self._in_order([t for t in self.results.trials if t.status == "no-fault"])

    @property
    def cross_check_disagreements(self) -> list[TrialResult]:
        """Trials whose periodic re-reads disagreed with what the watch had delivered."""
        return self._in_order(
            [
                t
                for t in self.results.trials
                if t.evidence.cross_check is not None and t.evidence.cross_check.disagreements
            ]
        )


def _pairs(faults: list[ExperimentInfo], approaches: list[str]) -> list[tuple[ExperimentInfo, str]]:
    return [(f, a) for f in faults for a in approaches]


def summarize(results: RunResults) -> RunSummary:
    """Group the trials into cells; faults asked for but never described still get a row."""
    faults = list(results.experiments)
    known = {e.name for e in faults}
    for name in results.settings.experiments:
        if name not in known:
            # Asked for, then interrupted before the run recorded what it is.
            faults.append(
                ExperimentInfo(
                    name=name,
                    title=name,
                    fault="",
                    approaches=list(results.settings.approaches),
                    builtin=False,
                )
            )
            known.add(name)
    approaches = list(dict.fromkeys(results.settings.approaches))
    for trial in results.trials:
        if trial.approach not in approaches:
            approaches.append(trial.approach)

    cells: dict[tuple[str, str], Cell] = {}
    for exp in faults:
        for approach in approaches:
            planned = approach in exp.approaches and approach in results.settings.approaches
            trials = tuple(results.trials_of(exp.name, approach))
            cells[(exp.name, approach)] = Cell(
                experiment=exp,
                approach=approach,
                # Recorded trials count even where the experiment did not list the approach.
                applicable=planned or bool(trials),
                planned=results.settings.trials if planned else 0,
                trials=trials,
            )
    verdicts = {a: _verdict(a, [c for (_, ap), c in cells.items() if ap == a]) for a in approaches}
    return RunSummary(results, faults, approaches, cells, verdicts)


def _verdict(approach: str, cells: list[Cell]) -> ApproachVerdict:
    applicable = [c for c in cells if c.applicable or c.trials]
    outcomes = [c.outcome for c in applicable]
    times = [
        t.time_to_heal_seconds
        for c in applicable
        for t in c.trials
        if t.time_to_heal_seconds is not None
    ]
    authors = [c.heal_author for c in cells if c.outcome == "healed"]
    return ApproachVerdict(
        approach=approach,
        faults=len(applicable),
        healed=outcomes.count("healed"),
        not_healed=outcomes.count("not-healed"),
        mixed=outcomes.count("mixed"),
        errors=outcomes.count("error"),
        missing=outcomes.count("missing"),
        median_seconds=statistics.median(times) if times else None,
        no_fault=outcomes.count("no-fault"),
        by_kubernetes=authors.count("kubernetes"),
        by_approach=authors.count("approach"),
    )


def seconds(value: float) -> str:
    """Durations as people read them: two decimals below 10 s, one above."""
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def window(value: float) -> str:
    return f"{value:g} s"


def cell_text(cell: Cell) -> str:
    """The one-line cell of the table: `healed p50 0.42 s, p95 0.61 s`, `NOT healed ...`."""
    outcome = cell.outcome
    if outcome == "n/a":
        return f"skipped: {cell.skip_reason}"
    if outcome == "missing":
        return "not run"
    n = cell.recorded
    heal = cell.heal_times
    if outcome == "healed" and heal is not None:
        text = (
            f"healed p50 {seconds(heal.p50)}, p95 {seconds(heal.p95)}"
            if n > 1
            else f"healed in {seconds(heal.p50)}"
        )
        if cell.flapped:
            text += f" ({cell.flapped}/{n} flapped first)" if n > 1 else " (flapped first)"
    elif outcome == "not-healed":
        text = f"NOT healed within {window(cell.window_seconds)}"
        if cell.healed_briefly:
            text += (
                f" ({cell.healed_briefly}/{n} healed briefly, never settled)"
                if n > 1
                else " (healed briefly, never settled)"
            )
    elif outcome == "no-fault":
        text = (
            f"no fault seen in {n}/{n} trials (the injection changed nothing)"
            if n > 1
            else NO_FAULT_TEXT
        )
    elif outcome == "error":
        text = f"error ({n}/{n} trials)" if n > 1 else "error"
    else:
        text = f"healed {cell.healed}/{n}"
        if heal is not None:
            text += f", p50 {seconds(heal.p50)}"
        if cell.not_healed:
            text += f"; {cell.not_healed} NOT healed"
        if cell.no_fault:
            text += f"; {cell.no_fault} no fault seen"
        if cell.errors:
            text += f"; {cell.errors} error" + ("s" if cell.errors > 1 else "")
    if cell.missing_trials:
        text += f" [{n} of {cell.planned} trials run]"
    return text
