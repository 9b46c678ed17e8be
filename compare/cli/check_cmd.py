"""`compare check [RUN] --policy FILE`: the CI gate. Exit 0 all hold, 1 any broken, 2 bad input."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from compare.check import DEFAULT_POLICY, evaluate, load_policy
from compare.check.consistency import check_policy_names, check_results
from compare.cli.report_cmd import RunArg
from compare.errors import EXIT_FAILED, CompareError
from compare.inert import ci_line
from compare.paths import REPORTS_DIR
from compare.results import load_results, resolve_results, summarize


def say(line: str) -> None:
    """One line of the gate's output, as a CI log reads it: a name or an error from the
    results holding a newline, an ESC or a workflow command (`::error::`, `::stop-commands::`)
    is shown escaped, so no line of this output can be forged."""
    typer.echo(ci_line(line))


def check(
    run: RunArg = None,
    policy: Annotated[
        Path,
        typer.Option(
            "--policy",
            help="Policy file (expectations per approach and fault).",
            dir_okay=False,
            show_default="experiments/policy.yaml",
        ),
    ] = DEFAULT_POLICY,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also list the expectations that hold.")
    ] = False,
) -> None:
    """Check a run against a policy; every broken expectation is one line."""
    source = resolve_results(run, REPORTS_DIR)
    rules = load_policy(policy)
    results = load_results(source)
    # Bad input (exit 2), not a violation (exit 1): a run that contradicts itself, or an
    # `except` that names no fault or leaves none.
    check_results(results, str(source))
    check_policy_names(rules, results, str(policy))
    if results.complete and not results.trials:
        # Every expectation would hold vacuously: a complete run with no trial proves nothing
        # (an interrupted one is reported as such by the evaluation).
        raise CompareError(f"{source}: complete is true but it holds no trials; nothing to check")
    result = evaluate(rules, summarize(results))
    say(f"policy {policy} on {source}")
    for line in result.run_problems:
        say(f"FAIL {line}")
    for verdict in result.verdicts:
        if not verdict.ok:
            say(f"FAIL {verdict.line}")
        elif verbose:
            say(f"ok   {verdict.line}")
    for note in result.notes:
        say(f"note {note}")
    total = len(result.verdicts) + len(result.run_problems)
    if result.holds:
        say(f"policy holds: {total} checks passed")
        return
    say(f"policy broken: {len(result.violations)} of {total} checks failed")
    raise typer.Exit(EXIT_FAILED)
