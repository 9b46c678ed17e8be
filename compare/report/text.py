"""The terminal table and the Markdown report, both through tabulate."""

from __future__ import annotations

from tabulate import tabulate

from compare import inert
from compare.report.data import (
    ReportData,
    chaos_text,
    fault_seen_text,
    flaps_text,
    secs,
    settled_text,
)
from compare.results import Cell, TrialResult


def _rows(data: ReportData) -> list[list[str]]:
    s = data.summary
    rows = []
    for fault in s.faults:
        row = [inert.visible(fault.name)]
        for approach in s.approaches:
            cell = s.cell(fault.name, approach)
            row.append(inert.visible(data.table_text(cell)) if cell is not None else "not run")
        rows.append(row)
    return rows


def _policy_lines(data: ReportData) -> list[str]:
    check = data.check
    if check is None:
        return []
    where = data.policy_path or "policy"
    if check.holds:
        return [f"Policy {where}: holds ({len(check.verdicts)} checks)"]
    broken = check.violations
    return [f"Policy {where}: BROKEN ({len(broken)} of {len(check.verdicts)} checks)"] + [
        f"  x {line}" for line in broken
    ]


def _sections(data: ReportData) -> list[tuple[str, list[str]]]:
    """The notes under the verdict, in every text format: title and lines, when any."""
    return [
        (title, lines)
        for title, lines in (
            ("No fault seen (not counted as healed)", data.no_fault_lines()),
            ("chaostoolkit disagrees", data.chaos_lines()),
            ("Watch cross-check disagreements", data.cross_check_lines()),
            ("Errors", data.error_lines()),
            ("Skipped (not run against this app or cluster)", data.skipped_lines()),
        )
        if lines
    ]


def render_table(data: ReportData) -> str:
    """The terminal view: header lines, the fault x approach table, verdicts and notes (every
    line and cell one visible line: `compare.inert.visible`)."""
    s = data.summary
    shown = inert.visible
    out = [shown(data.run_line()), shown(data.settings_line())]
    incomplete = data.incomplete_line()
    if incomplete:
        out.append(f"!! {incomplete}")
    out.append("")
    out.append(
        tabulate(
            _rows(data),
            headers=["fault", *map(shown, s.approaches)],
            tablefmt="rounded_outline",
            disable_numparse=True,
        )
    )
    out.append("")
    out.append("Verdict")
    out += [f"  {shown(v.text)}" for v in s.verdicts.values()]
    for title, lines in _sections(data):
        out.append("")
        out.append(title)
        out += [f"  {shown(line)}" for line in lines]
    policy = _policy_lines(data)
    if policy:
        out.append("")
        out += map(shown, policy)
    return "\n".join(out) + "\n"


# Every string from results.json goes through the one output layer (`compare.inert`).
_md = inert.markdown
_code = inert.markdown_code


def _md_cell(data: ReportData, cell: Cell | None) -> str:
    if cell is None:
        return "not run"
    text = _md(data.table_text(cell))
    if cell.outcome in ("not-healed", "no-fault", "error", "mixed"):
        return f"**{text}**"
    return text


def _trial_row(t: TrialResult) -> list[str]:
    ev = t.evidence
    notes = list(ev.mismatches_at_end) or ([t.error] if t.error else [])
    if ev.cross_check is not None and ev.cross_check.disagreements:
        notes.append("cross-check: " + "; ".join(ev.cross_check.disagreements))
    chaos = _md(chaos_text(t))
    return [
        _code(t.experiment),
        _md(t.approach),
        str(t.trial),
        _md(t.status) if t.status == "healed" else f"**{_md(t.status)}**",
        secs(t.time_to_first_heal_seconds),
        _md(settled_text(t)),
        _md(flaps_text(t)),
        _md(fault_seen_text(t)),
        secs(t.time_to_detect_seconds),
        _md(", ".join(ev.recreated)) or "-",
        f"**{chaos}**" if t.chaos_disagrees else chaos,
        _md("; ".join(notes)) or "-",
    ]


def render_markdown(data: ReportData) -> str:
    """A GitHub-flavoured Markdown report: summary table, verdicts, policy, per-trial detail."""
    s = data.summary
    r = data.results
    out = ["# Helm vs operator: self-healing report", ""]
    out += [f"- {_md(data.run_line())}", f"- {_md(data.settings_line())}"]
    incomplete = data.incomplete_line()
    if incomplete:
        out += ["", f"> **Warning:** {_md(incomplete)}"]
    rows = []
    for fault in s.faults:
        title = f"{_md(fault.title)} ({_code(fault.name)})" if fault.title != fault.name else ""
        row = [title or _code(fault.name)]
        row += [_md_cell(data, s.cell(fault.name, a)) for a in s.approaches]
        rows.append(row)
    out += ["", "## Results", ""]
    out.append(
        tabulate(rows, headers=["fault", *[_md(a) for a in s.approaches]], tablefmt="github")
    )
    out += [
        "",
        _md(data.precision_note()),
        "",
        "## Verdict",
        "",
    ]
    out += [f"- **{_md(v.approach)}**: {_md(v.text)}" for v in s.verdicts.values()]
    for title, lines in _sections(data):
        out += ["", f"## {_md(title)}", ""] + [f"- {_md(line)}" for line in lines]
    if data.check is not None:
        out += ["", "## Policy", ""]
        policy = _policy_lines(data)
        out.append(_md(policy[0]))
        if len(policy) > 1:
            out.append("")
            out += [f"- {_md(line.removeprefix('  x '))}" for line in policy[1:]]
    out += ["", "## Trials", "", "<details><summary>Every trial</summary>", ""]
    out.append(
        tabulate(
            [_trial_row(t) for t in r.trials],
            headers=[
                "fault",
                "approach",
                "trial",
                "status",
                "first heal",
                "settled heal",
                "flaps",
                "fault seen",
                "time to detect",
                "recreated",
                "chaostoolkit",
                "mismatches at end / error / cross-check",
            ],
            tablefmt="github",
            disable_numparse=True,
        )
    )
    out += ["", "</details>", ""]
    return "\n".join(out)
