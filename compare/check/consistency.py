"""What `compare check` refuses before it judges: results that contradict themselves, and
policy rules whose `except` names no fault or leaves none.

A results.json that passes its schema can still be impossible: a heal after the trial's heal
window (a heal counts only within it), more trials of a cell than the run's settings asked
for, a trial of an approach the settings do not list or the experiment does not apply to, a
number outside the range `compare run` accepts. Judging such a file would let a hand-edited or
corrupted run pass the gate. Each is a bad input (one line naming the file and the field, exit
2), never a policy violation (exit 1). Pure: results.json data and the catalogue's file names.
"""

from __future__ import annotations

from compare.check.evaluate import known_fault
from compare.check.policy import Policy
from compare.errors import CompareError
from compare.paths import EXPERIMENTS_DIR
from compare.results import RunResults
from compare.results.model import MAX_HEAL_WINDOW_S, MAX_PARALLEL, MAX_SETTLE_S, MAX_TRIALS

# An approach's cadence (Flux's interval) is at most an hour, as a heal window is.
MAX_CADENCE_S = MAX_HEAL_WINDOW_S
# Times are written rounded; a heal at the window's very end may read a hair past it.
_SLACK_S = 1e-3


def check_results(results: RunResults, source: str) -> None:
    """Raise CompareError (`<source>: <field>: ...`) for the first contradiction."""
    problem = _contradiction(results)
    if problem is not None:
        raise CompareError(f"{source}: {problem}")


def check_policy_names(policy: Policy, results: RunResults, source: str) -> None:
    """An `except` entry must name a fault (a built-in experiment or one of this run), and a
    rule must not except every fault it would cover: it would check nothing, silently."""
    builtin = {path.stem for path in EXPERIMENTS_DIR.glob("*.json")}
    in_run = {e.name for e in results.experiments}
    for index, rule in enumerate(policy.expectations):
        at = f"expectations[{index}].except"
        for name in rule.except_:
            if not known_fault(name, in_run):
                raise CompareError(
                    f"{source}: {at}: {name!r} is neither a built-in experiment nor in this run"
                    " (a misspelt name?)"
                )
        if rule.faults != "all" or not rule.except_:
            continue
        covered = builtin | {e.name for e in results.experiments if rule.approach in e.approaches}
        if covered <= set(rule.except_):
            raise CompareError(
                f"{source}: {at}: excepts every fault, so the rule checks nothing"
                " (remove the rule, or list the faults it should check)"
            )


def _contradiction(results: RunResults) -> str | None:
    settings = results.settings
    ranges = (
        ("settings.trials", settings.trials, MAX_TRIALS),
        ("settings.healWindowSeconds", settings.heal_window_seconds, MAX_HEAL_WINDOW_S),
        ("settings.settleSeconds", settings.settle_seconds, MAX_SETTLE_S),
        ("settings.parallel", settings.parallel, MAX_PARALLEL),
    )
    for field, value, maximum in ranges:
        if value > maximum:
            return f"{field}: {value:g} is more than compare run accepts ({maximum:g})"
    for index, found in enumerate(results.preflight_findings or []):
        # An arm its preflight left out has no trial: it cannot be one the run ran.
        if found.approach in settings.approaches:
            return (
                f"preflightFindings[{index}].approach: {found.approach!r} was left out of the"
                " run, yet is one of settings.approaches"
            )
    windows = settings.heal_windows or {}
    for approach, window in windows.items():
        at = f"settings.healWindows.{approach}"
        if approach not in settings.approaches:
            return f"{at}: {approach!r} is not one of settings.approaches"
        if window.cadence_seconds > MAX_CADENCE_S:
            return f"{at}.cadenceSeconds: {window.cadence_seconds:g} s is more than an hour"
        longest = settings.heal_window_seconds + window.cadence_seconds + _SLACK_S
        if window.heal_window_seconds > longest:
            return (
                f"{at}.healWindowSeconds: {window.heal_window_seconds:g} s is more than"
                f" settings.healWindowSeconds plus the cadence ({longest - _SLACK_S:g} s)"
            )
    experiments = {e.name: e for e in results.experiments}
    for i, listed in enumerate(results.experiments):
        both = [a for a in listed.skipped_for or {} if a in listed.approaches]
        if both:
            return (
                f"experiments[{i}].skippedFor: {both[0]!r} is one of its approaches too (a"
                " fault is run or skipped for an approach, not both)"
            )
    for i, trial in enumerate(results.trials):
        at = f"trials[{i}]"
        if trial.approach not in settings.approaches:
            return (
                f"{at}.approach: {trial.approach!r} is not one of settings.approaches"
                f" ({', '.join(settings.approaches)})"
            )
        info = experiments.get(trial.experiment)
        if info is not None and trial.approach not in info.approaches:
            return (
                f"{at}.approach: the experiment {trial.experiment!r} does not apply to"
                f" {trial.approach!r} (its approaches: {', '.join(info.approaches)})"
            )
        if trial.trial > settings.trials:
            return (
                f"{at}.trial: trial {trial.trial} of {trial.experiment}/{trial.approach}, but"
                f" settings.trials is {settings.trials}"
            )
        given = windows.get(trial.approach)
        expected = (
            given.heal_window_seconds
            if given is not None
            else settings.heal_window_seconds + MAX_CADENCE_S
        )
        if trial.heal_window_seconds > expected + _SLACK_S:
            return (
                f"{at}.healWindowSeconds: {trial.heal_window_seconds:g} s is more than the"
                f" run gave {trial.approach} ({expected:g} s)"
            )
        healed = trial.time_to_heal_seconds
        if healed is not None and healed > trial.heal_window_seconds + _SLACK_S:
            return (
                f"{at}.timeToHealSeconds: {healed:g} s is after the trial's heal window of"
                f" {trial.heal_window_seconds:g} s (a heal counts only within it)"
            )
    return None
