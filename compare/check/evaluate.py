"""Applying a policy to a run: one verdict per (expectation, fault), each with a one-line why."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from compare.check.policy import Expectation, Policy
from compare.paths import EXPERIMENTS_DIR
from compare.results import Cell, RunSummary, seconds


@dataclass(frozen=True)
class Verdict:
    """One expectation applied to one fault of one approach."""

    index: int  # position in policy.expectations
    expectation: Expectation
    approach: str
    fault: str
    cell: Cell | None  # None when the run has no such fault or approach
    problems: tuple[str, ...]
    note: str = ""  # why a check passed without evidence (optional and not run)

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def line(self) -> str:
        """`operator/image-change: expected to heal within 5 s (max): 1/3 trials ...`."""
        head = f"{self.approach}/{self.fault}: expected {self.expectation.wording}"
        if self.ok:
            return f"{head}: holds" + (f" ({self.note})" if self.note else "")
        return f"{head}: {'; '.join(self.problems)}"


@dataclass(frozen=True)
class CheckResult:
    """The policy's verdicts on one run, plus run-level problems and advisory notes."""

    verdicts: list[Verdict]
    run_problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def violations(self) -> list[str]:
        return self.run_problems + [v.line for v in self.verdicts if not v.ok]

    @property
    def holds(self) -> bool:
        return not self.violations

    def verdicts_for(self, fault: str, approach: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.fault == fault and v.approach == approach]


def evaluate(policy: Policy, summary: RunSummary) -> CheckResult:
    """Judge every cell a rule covers; uncovered cells only produce notes."""
    results = summary.results
    run_problems: list[str] = []
    if policy.require_complete and not results.complete:
        run_problems.append(
            f"run {results.run_id} is incomplete (complete=false: interrupted or partial,"
            f" {summary.recorded_trials} of {summary.planned_trials} planned trials recorded);"
            " set requireComplete: false to judge partial runs"
        )
    verdicts: list[Verdict] = []
    for index, rule in enumerate(policy.expectations):
        if rule.faults == "all" and rule.approach not in summary.approaches:
            # One line for the whole approach, not one per fault it would have covered.
            verdicts.append(_judge(index, rule, "all", None, summary))
            continue
        for fault in _faults_of(rule, summary):
            cell = summary.cell(fault, rule.approach)
            verdicts.append(_judge(index, rule, fault, cell, summary))

    run_problems += _contradictions(policy, verdicts)
    covered = {(v.fault, v.approach) for v in verdicts}
    notes = _uncovered_notes(summary, covered)
    return CheckResult(verdicts, run_problems, notes)


def _faults_of(rule: Expectation, summary: RunSummary) -> list[str]:
    if isinstance(rule.faults, list):
        return list(rule.faults)
    # `all`: every fault of this run that applies to the approach (and, with `kinds`, whose
    # trials acted on an object of those kinds).
    faults: list[str] = []
    for f in summary.faults:
        if rule.approach not in f.approaches:
            continue
        cell = summary.cell(f.name, rule.approach)
        if rule.covers(f.name, cell.kind if cell is not None else None):
            faults.append(f.name)
    return faults


def _contradictions(policy: Policy, verdicts: list[Verdict]) -> list[str]:
    """Rules that demand different outcomes of one cell (possible only through `kinds`, whose
    faults are known from the run; the policy file refuses every other overlap)."""
    demands: dict[tuple[str, str], Verdict] = {}
    problems: list[str] = []
    for v in (v for v in verdicts if v.cell is not None):
        first = demands.setdefault((v.approach, v.fault), v)
        if first.expectation.expect != v.expectation.expect:
            problems.append(
                f"expectations[{first.index}] and expectations[{v.index}] contradict each other"
                f" on {v.approach}/{v.fault} ({first.expectation.expect} and"
                f" {v.expectation.expect})"
            )
    return problems


def _judge(
    index: int, rule: Expectation, fault: str, cell: Cell | None, summary: RunSummary
) -> Verdict:
    def verdict(*problems: str, note: str = "") -> Verdict:
        return Verdict(index, rule, rule.approach, fault, cell, tuple(problems), note)

    absent = _absence(rule, fault, cell, summary)
    if absent is not None:
        if cell is None and isinstance(rule.faults, list) and not _known_fault(fault, summary):
            # `optional` forgives a fault this run did not include, never a misspelt one.
            return verdict(
                f"fault {fault!r} is neither a built-in experiment nor in this run"
                " (a misspelt name?)"
            )
        if rule.optional:
            return verdict(note=f"optional; {absent}")
        return verdict(f"{absent}, and the expectation is not optional")
    assert cell is not None
    n = cell.recorded
    problems: list[str] = []
    if cell.errors:
        first = next(t for t in cell.trials if t.status == "error")
        if rule.expect == "heals":
            why = "an error counts as not healed"
        else:
            why = "an error proves nothing either way"
        problems.append(
            f"{cell.errors}/{n} trials ended in error ({why}; trial {first.trial}: {first.error})"
        )
    if rule.expect == "no-fault":
        seen = cell.healed + cell.not_healed
        if seen:
            problems.append(
                f"the fault was seen in {seen}/{n} trials ({cell.healed} healed,"
                f" {cell.not_healed} NOT healed): the injection changed something the judge checks"
            )
        return verdict(*problems)
    # A no-fault trial exercised nothing: it proves neither healing nor not healing.
    problems += [
        f"{t.label}: the injection changed nothing (no-fault), so the fault was not exercised"
        for t in cell.trials
        if t.status == "no-fault"
    ]
    if rule.expect == "heals":
        if cell.not_healed:
            problems.append(
                f"{cell.not_healed}/{n} trials NOT healed within the {cell.window_seconds:g} s"
                " window"
            )
        heal = cell.heal_times
        if rule.within is not None and heal is not None:
            value = heal.get(rule.statistic)
            if value > rule.within:
                problems.append(
                    f"{rule.statistic} time-to-heal {seconds(value)} exceeds {rule.within:g} s"
                )
    elif cell.healed:
        heal = cell.heal_times
        median = f", p50 {seconds(heal.p50)}" if heal else ""
        problems.append(f"healed in {cell.healed}/{n} trials{median}")
    return verdict(*problems)


def _known_fault(fault: str, summary: RunSummary) -> bool:
    return known_fault(fault, {c.experiment.name for c in summary.cells.values()})


def known_fault(fault: str, in_run: Collection[str]) -> bool:
    """A built-in experiment's name or a fault this run holds (a user's experiment)."""
    return fault in in_run or ("/" not in fault and (EXPERIMENTS_DIR / f"{fault}.json").is_file())


def _absence(rule: Expectation, fault: str, cell: Cell | None, summary: RunSummary) -> str | None:
    """Why the run holds no evidence for this cell, or None when it has trials."""
    if rule.approach not in summary.approaches:
        return f"approach {rule.approach!r} is not in this run"
    if cell is None:
        return f"fault {fault!r} is not in this run"
    if not cell.applicable and not cell.trials:
        return f"fault {fault!r} does not apply to {rule.approach} in this run"
    if not cell.trials:
        return "no trial was recorded (the run was cut short)"
    return None


def _uncovered_notes(summary: RunSummary, covered: set[tuple[str, str]]) -> list[str]:
    notes: list[str] = []
    uncovered = [
        c
        for (fault, approach), c in summary.cells.items()
        if c.applicable and (fault, approach) not in covered
    ]
    if uncovered:
        names = ", ".join(f"{c.approach}/{c.experiment.name}" for c in uncovered)
        notes.append(f"{len(uncovered)} cells not covered by the policy (not judged): {names}")
    for c in uncovered:
        if c.errors:
            notes.append(
                f"{c.approach}/{c.experiment.name}: {c.errors}/{c.recorded} trials ended in error"
                " outside any expectation"
            )
        if c.no_fault:
            notes.append(
                f"{c.approach}/{c.experiment.name}: {c.no_fault}/{c.recorded} trials saw no fault"
                " (the injection changed nothing) outside any expectation"
            )
    return notes
