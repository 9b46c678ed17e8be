"""The terminal table and the Markdown report, both through tabulate."""

from __future__ import annotations

from tabulate import tabulate

from compare.report.data import ReportData
from compare.results import Cell, cell_text, seconds


def _rows(data: ReportData) -> list[list[str]]:
    s = data.summary
    rows = []
    for fault in s.faults:
        row = [fault.name]
        for approach in s.approaches:
            cell = s.cell(fault.name, approach)
            row.append(cell_text(cell) if cell is not None else "n/a")
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


def render_table(data: ReportData) -> str:
    """The terminal view: header lines, the fault x approach table, verdicts and notes."""
    s = data.summary
    out = [data.run_line(), data.settings_line()]
    incomplete = data.incomplete_line()
    if incomplete:
        out.append(f"!! {incomplete}")
    out.append("")
    out.append(
        tabulate(
            _rows(data),
            headers=["fault", *s.approaches],
            tablefmt="rounded_outline",
            disable_numparse=True,
        )
    )
    out.append("")
    out.append("Verdict")
    out += [f"  {v.text}" for v in s.verdicts.values()]
    errors = data.error_lines()
    if errors:
        out.append("")
        out.append("Errors")
        out += [f"  {line}" for line in errors]
    policy = _policy_lines(data)
    if policy:
        out.append("")
        out += policy
    return "\n".join(out) + "\n"


def _md(text: str) -> str:
    """Escape what would break a Markdown table cell or start formatting."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("*", "\\*").replace("_", "\\_")


def _md_cell(cell: Cell | None) -> str:
    if cell is None:
        return "n/a"
    text = _md(cell_text(cell))
    if cell.outcome in ("not-healed", "error", "mixed"):
        return f"**{text}**"
    return text


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
        title = f"{_md(fault.title)} (`{fault.name}`)" if fault.title != fault.name else ""
        row = [title or f"`{fault.name}`"]
        row += [_md_cell(s.cell(fault.name, a)) for a in s.approaches]
        rows.append(row)
    out += ["", "## Results", ""]
    out.append(tabulate(rows, headers=["fault", *s.approaches], tablefmt="github"))
    out += [
        "",
        _md(data.precision_note()),
        "",
        "## Verdict",
        "",
    ]
    out += [f"- **{_md(v.approach)}**: {_md(v.text)}" for v in s.verdicts.values()]
    errors = data.error_lines()
    if errors:
        out += ["", "## Errors", ""] + [f"- {_md(line)}" for line in errors]
    if data.check is not None:
        out += ["", "## Policy", ""]
        policy = _policy_lines(data)
        out.append(_md(policy[0]))
        if len(policy) > 1:
            out.append("")
            out += [f"- {_md(line.removeprefix('  x '))}" for line in policy[1:]]
    out += ["", "## Trials", "", "<details><summary>Every trial</summary>", ""]
    trial_rows = []
    for t in r.trials:
        ev = t.evidence
        trial_rows.append(
            [
                f"`{t.experiment}`",
                _md(t.approach),
                str(t.trial),
                _md(t.status) if t.status == "healed" else f"**{_md(t.status)}**",
                seconds(t.time_to_heal_seconds) if t.time_to_heal_seconds is not None else "-",
                seconds(t.time_to_detect_seconds) if t.time_to_detect_seconds is not None else "-",
                _md(", ".join(ev.recreated)) or "-",
                _md("; ".join(ev.mismatches_at_end) or (t.error or "")) or "-",
            ]
        )
    out.append(
        tabulate(
            trial_rows,
            headers=[
                "fault",
                "approach",
                "trial",
                "status",
                "time to heal",
                "time to detect",
                "recreated",
                "mismatches at end / error",
            ],
            tablefmt="github",
            disable_numparse=True,
        )
    )
    out += ["", "</details>", ""]
    return "\n".join(out)
