"""`compare report [RUN] --format ...`: a run's report, regenerated from its results.json."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from compare.check import DEFAULT_POLICY, evaluate, load_policy
from compare.cli.common import print_warning
from compare.errors import CompareError
from compare.inert import encodable
from compare.outputfile import write_text
from compare.paths import REPORTS_DIR
from compare.report import ReportData, ReportFormat, render
from compare.results import load_results, resolve_results, summarize

RunArg = Annotated[
    Path | None,
    typer.Argument(
        help="Run directory or results.json (default: the newest run under reports/).",
        show_default=False,
    ),
]
PolicyOpt = Annotated[
    Path | None,
    typer.Option(
        "--policy",
        help="Policy file to judge the run by (junit: default experiments/policy.yaml).",
        dir_okay=False,
        show_default=False,
    ),
]


def report(
    run: RunArg = None,
    fmt: Annotated[
        ReportFormat, typer.Option("--format", "-f", help="Output format.")
    ] = ReportFormat.table,
    output: Annotated[
        # A string, not a Path: pathlib drops a trailing slash, and `-o afile/` names a
        # directory (compare.outputfile refuses it) - never the file `afile`.
        str | None,
        typer.Option(
            "--output",
            "-o",
            help="Write to FILE ('-' for stdout). Default: stdout; html: RUN/report.html.",
            metavar="FILE",
            show_default=False,
        ),
    ] = None,
    policy: PolicyOpt = None,
) -> None:
    """Report which approach healed which fault, how fast, and on what evidence."""
    source = resolve_results(run, REPORTS_DIR)
    summary = summarize(load_results(source))
    if policy is None and fmt is ReportFormat.junit:
        policy = DEFAULT_POLICY
    check = evaluate(load_policy(policy), summary) if policy is not None else None
    if output is None and fmt is ReportFormat.html:
        output = str(source.parent / "report.html")
    to_stdout = output is None or output == "-"
    data = ReportData(
        summary=summary,
        source=source,
        check=check,
        policy_path=policy,
        output_dir=None if to_stdout or output is None else Path(output).parent,
    )
    text = render(fmt, data)
    if to_stdout or output is None:
        # An ASCII terminal (`LC_ALL=C`) gets what it cannot hold as the format's own escapes.
        form = {ReportFormat.json: "json", ReportFormat.table: "text"}.get(fmt, "xml")
        sys.stdout.write(encodable(text, sys.stdout.encoding, form=form))
        return
    inputs = [source] + ([policy] if policy is not None else [])
    try:
        written = write_text(output, text, inputs=inputs)
    except CompareError as exc:
        raise CompareError(f"--output {exc.message}") from None
    print_warning(f"{fmt.value} report written to {written}")
