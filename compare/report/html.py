"""The self-contained HTML report: one file, no network fetch, no external font or script.

A Content-Security-Policy meta tag forbids every fetch, so a stray external reference fails
loudly in the browser (and in the headless-browser test) instead of leaking a request.
"""

from __future__ import annotations

import json
import re
from typing import Any

from compare import __version__
from compare.check import Verdict
from compare.inert import html as escape
from compare.inert import html_href
from compare.report.chart import colour_of, render_chart
from compare.report.data import (
    ReportData,
    chaos_text,
    fault_seen_text,
    flaps_text,
    secs,
    settled_text,
)
from compare.results import Cell, ObjectUids, TrialResult, cell_text, seconds
from compare.results.writers import written_by

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline';"
    " img-src data:; base-uri 'none'; form-action 'none'"
)

STYLE = """
:root { --ok: #15803d; --bad: #dc2626; --warn: #b45309; --muted: #6b7280; --line: #e5e7eb;
  --bg-ok: #dcfce7; --bg-bad: #fee2e2; --bg-warn: #fef3c7; --bg-muted: #f3f4f6; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; margin: 0;
  color: #111827; background: #fff; }
main { max-width: 1100px; margin: 0 auto; padding: 24px; }
h1 { font-size: 24px; margin: 0 0 4px; } h2 { margin-top: 32px; border-bottom: 1px solid
  var(--line); padding-bottom: 4px; } h3 { margin: 24px 0 8px; } h4 { margin: 16px 0 6px; }
.meta { color: var(--muted); margin: 2px 0; }
.banner { background: var(--bg-warn); border: 1px solid var(--warn); padding: 10px 14px;
  border-radius: 6px; margin: 16px 0; }
.verdicts { display: flex; flex-wrap: wrap; gap: 12px; }
.verdict { border: 1px solid var(--line); border-left: 6px solid; border-radius: 6px;
  padding: 10px 14px; min-width: 260px; flex: 1; }
.verdict .big { font-size: 22px; font-weight: 700; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid var(--line); padding: 5px 9px; text-align: left; vertical-align: top; }
th { background: var(--bg-muted); }
td.healed { background: var(--bg-ok); } td.not-healed, td.error { background: var(--bg-bad); }
td.mixed, td.no-fault { background: var(--bg-warn); } td.missing, td.na {
  background: var(--bg-muted); color: var(--muted); }
td a { color: inherit; }
.status-healed { color: var(--ok); font-weight: 600; }
.status-not-healed, .status-error { color: var(--bad); font-weight: 600; }
.status-mixed, .status-no-fault { color: var(--warn); font-weight: 600; }
.status-missing, .status-na { color: var(--muted); }
.disagrees { color: var(--warn); font-weight: 600; }
.problem { color: var(--bad); } .holds { color: var(--ok); } .note { color: var(--muted); }
code, pre { font: 12px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
pre { background: var(--bg-muted); padding: 6px 8px; margin: 0; white-space: pre-wrap;
  word-break: break-word; max-height: 240px; overflow: auto; }
details { border: 1px solid var(--line); border-radius: 6px; margin: 6px 0; padding: 4px 10px; }
summary { cursor: pointer; }
.grid { display: grid; grid-template-columns: repeat(3, 1fr); gap: 8px; margin: 6px 0; }
.grid > div > b { display: block; color: var(--muted); font-weight: 600; }
.changed { color: var(--bad); font-weight: 600; }
.chart-wrap { overflow-x: auto; }
.chart { max-width: 100%; height: auto; }
.toolbar { margin: 8px 0; } .toolbar button { margin-right: 6px; }
body.problems-only section.fault[data-problem="false"] { display: none; }
footer { color: var(--muted); margin-top: 40px; font-size: 12px; }
"""

# Toolbar behaviour; the last line marks the page as fully scripted (the browser test checks it).
SCRIPT = """
(function () {
  "use strict";
  var body = document.body;
  document.getElementById("show-problems").addEventListener("click", function (ev) {
    var on = body.classList.toggle("problems-only");
    ev.target.textContent = on ? "Show every fault" : "Show only faults with problems";
  });
  function setOpen(open) {
    document.querySelectorAll("details.evidence").forEach(function (d) { d.open = open; });
  }
  document.getElementById("expand").addEventListener("click", function () { setOpen(true); });
  document.getElementById("collapse").addEventListener("click", function () { setOpen(false); });
  document.documentElement.setAttribute("data-ready", "true");
})();
"""


def _id(*parts: str) -> str:
    return "-".join(re.sub(r"[^A-Za-z0-9_-]", "_", p) for p in parts)


def _title(cell: Cell) -> str:
    """A skipped cell's reason as its tooltip (it is listed under the table too)."""
    reason = cell.skip_reason
    return "" if reason is None else f' title="{escape(reason)}"'


def _css_class(cell: Cell) -> str:
    return "na" if cell.outcome == "n/a" else cell.outcome


def render_html(data: ReportData) -> str:
    s = data.summary
    r = data.results
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>Self-healing report {escape(r.run_id)}</title>",
        f"<style>{STYLE}</style></head><body><main>",
        "<h1>Helm vs operator: self-healing report</h1>",
        f'<p class="meta">{escape(data.run_line())}</p>',
        f'<p class="meta">{escape(data.settings_line())}</p>',
    ]
    incomplete = data.incomplete_line()
    if incomplete:
        parts.append(
            f'<div class="banner" role="alert"><b>Incomplete run.</b> {escape(incomplete)}</div>'
        )
    parts += _verdicts(data)
    parts += _table(data)
    parts += [
        "<h2>Time to heal</h2>",
        '<div class="chart-wrap">',
        render_chart(s),
        "</div>",
    ]
    if data.check is not None:
        parts += _policy(data)
    parts += _evidence(data)
    parts += [
        f"<footer>Generated by helm-vs-operator {escape(__version__)} from"
        f" <code>{escape(str(data.source))}</code> (written by {escape(r.tool_version)}),"
        " without a cluster: <code>compare report --format html</code>.</footer>",
        f"</main><script>{SCRIPT}</script></body></html>",
    ]
    return "\n".join(parts) + "\n"


def _verdicts(data: ReportData) -> list[str]:
    s = data.summary
    out = ["<h2>Verdict</h2>", '<div class="verdicts">']
    for v in s.verdicts.values():
        median = f"median {seconds(v.median_seconds)}" if v.median_seconds is not None else ""
        out.append(
            f'<div class="verdict" style="border-left-color:{colour_of(s, v.approach)}">'
            f"<div><b>{escape(v.approach)}</b></div>"
            f'<div class="big">{v.healed}/{v.faults} faults healed</div>'
            f"<div>{escape(median)}</div>"
            f'<div class="note">{escape(v.text)}</div></div>'
        )
    out.append("</div>")
    for title, css, lines in (
        ("No fault seen (not counted as healed)", "disagrees", data.no_fault_lines()),
        ("chaostoolkit disagrees", "disagrees", data.chaos_lines()),
        ("Watch cross-check disagreements", "disagrees", data.cross_check_lines()),
        ("Skipped (not run against this app or cluster)", "skipped", data.skipped_lines()),
    ):
        if lines:
            out.append(f'<h3>{escape(title)}</h3><ul class="{css}-list">')
            out += [f'<li class="{css}">{escape(line)}</li>' for line in lines]
            out.append("</ul>")
    return out


def _table(data: ReportData) -> list[str]:
    s = data.summary
    out = [
        "<h2>Results</h2>",
        '<table class="results"><thead><tr><th>fault</th>',
        *[f"<th>{escape(a)}</th>" for a in s.approaches],
        "</tr></thead><tbody>",
    ]
    for fault in s.faults:
        out.append(
            f'<tr><td><a href="#{_id("fault", fault.name)}">{escape(fault.title)}</a>'
            f"<br><code>{escape(fault.name)}</code></td>"
        )
        for approach in s.approaches:
            cell = s.cell(fault.name, approach)
            if cell is None:
                out.append('<td class="missing">not run</td>')
                continue
            mark = ""
            if data.check is not None and any(
                not v.ok for v in data.check.verdicts_for(fault.name, approach)
            ):
                mark = ' <b class="problem" title="breaks the policy">&#x2717; policy</b>'
            out.append(
                f'<td class="{_css_class(cell)}">'
                f'<a href="#{_id("cell", fault.name, approach)}"{_title(cell)}>'
                f"{escape(data.table_text(cell))}</a>"
                f"{mark}</td>"
            )
        out.append("</tr>")
    out.append("</tbody></table>")
    out.append(f'<p class="note">{escape(data.precision_note())}</p>')
    errors = data.error_lines()
    if errors:
        out.append("<h3>Errors</h3><ul>")
        out += [f'<li class="problem">{escape(line)}</li>' for line in errors]
        out.append("</ul>")
    return out


def _policy(data: ReportData) -> list[str]:
    check = data.check
    assert check is not None
    where = escape(str(data.policy_path or "policy"))
    if check.holds:
        head = (
            f'<p class="holds"><b>Policy <code>{where}</code> holds</b>'
            f" ({len(check.verdicts)} checks).</p>"
        )
    else:
        head = (
            f'<p class="problem"><b>Policy <code>{where}</code> is broken:</b>'
            f" {len(check.violations)} of {len(check.verdicts)} checks.</p>"
        )
    out = ["<h2>Policy</h2>", head]
    if check.violations:
        out.append("<ul>")
        out += [f'<li class="problem">{escape(line)}</li>' for line in check.violations]
        out.append("</ul>")
    out += [f'<p class="note">{escape(note)}</p>' for note in check.notes]
    return out


def _evidence(data: ReportData) -> list[str]:
    s = data.summary
    out = [
        "<h2>Evidence</h2>",
        '<div class="toolbar"><button type="button" id="show-problems">'
        "Show only faults with problems</button>"
        '<button type="button" id="expand">Expand all</button>'
        '<button type="button" id="collapse">Collapse all</button></div>',
    ]
    for fault in s.faults:
        cells = [c for a in s.approaches if (c := s.cell(fault.name, a)) is not None]
        problem = any(
            c.outcome in ("not-healed", "no-fault", "error", "mixed", "missing") for c in cells
        )
        if data.check is not None:
            problem = problem or any(not v.ok for v in data.check.verdicts if v.fault == fault.name)
        origin = "built-in" if fault.builtin else "user experiment"
        path = f", <code>{escape(fault.path)}</code>" if fault.path else ""
        out.append(
            f'<section class="fault" id="{_id("fault", fault.name)}"'
            f' data-problem="{str(problem).lower()}">'
            f"<h3>{escape(fault.title)} <code>{escape(fault.name)}</code></h3>"
            f'<p class="note">{escape(fault.fault)} ({origin}{path})</p>'
        )
        for cell in cells:
            out += _cell_evidence(data, cell)
        out.append("</section>")
    return out


def _cell_evidence(data: ReportData, cell: Cell) -> list[str]:
    out = [
        f'<h4 id="{_id("cell", cell.experiment.name, cell.approach)}">'
        f'{escape(cell.approach)}: <span class="status-{_css_class(cell)}">'
        f"{escape(cell_text(cell))}</span></h4>"
    ]
    if data.check is not None:
        for v in data.check.verdicts_for(cell.experiment.name, cell.approach):
            out.append(_verdict_line(v))
    if not cell.trials:
        return out
    out.append(
        "<table><thead><tr><th>trial</th><th>status</th><th>first heal</th>"
        "<th>settled heal</th><th>flaps</th><th>fault seen</th><th>time to detect</th>"
        "<th>detected by</th><th>recreated</th><th>ready / desired</th><th>chaostoolkit</th>"
        "<th>journal</th></tr></thead><tbody>"
    )
    for t in cell.trials:
        ev = t.evidence
        ready = (
            f"{ev.ready_pods} / {ev.desired_replicas}"
            if ev.ready_pods is not None and ev.desired_replicas is not None
            else "-"
        )
        # A journal that is no path (`javascript:...`) is shown as text, never linked.
        href = data.journal_href(t)
        link = html_href(href) if href else None
        journal = f'<a href="{link}">{escape(t.journal or "")}</a>' if link else "-"
        if href and not link:
            journal = escape(t.journal or "-")
        chaos = escape(chaos_text(t))
        if t.chaos_disagrees:
            chaos = f'<span class="disagrees">&#x26A0; {chaos}</span>'
        out.append(
            f'<tr><td>{t.trial}</td><td class="status-{t.status}">{escape(t.status)}</td>'
            f"<td>{secs(t.time_to_first_heal_seconds)}</td>"
            f"<td>{escape(settled_text(t))}</td>"
            f"<td>{escape(flaps_text(t))}</td>"
            f"<td>{escape(fault_seen_text(t, detail=False))}</td>"
            f"<td>{secs(t.time_to_detect_seconds)}</td>"
            f"<td>{escape(ev.detected_by or '-')}</td>"
            f"<td>{escape(', '.join(ev.recreated) or '-')}</td><td>{ready}</td>"
            f"<td>{chaos}</td><td>{journal}</td></tr>"
        )
    out.append("</tbody></table>")
    out += [_trial_details(t) for t in cell.trials]
    return out


def _verdict_line(v: Verdict) -> str:
    if v.ok:
        return (
            f'<p class="holds">&#x2713; policy: expected {escape(v.expectation.wording)}: holds</p>'
        )
    reason = f" ({escape(v.expectation.reason)})" if v.expectation.reason else ""
    return f'<p class="problem">&#x2717; policy: {escape(v.line)}{reason}</p>'


def _json(value: Any) -> str:
    return escape(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _trial_details(t: TrialResult) -> str:
    ev = t.evidence
    injected = t.injected_at.isoformat() if t.injected_at else "-"
    body = [
        f'<details class="evidence"><summary>trial {t.trial} evidence:'
        f' <span class="status-{t.status}">{escape(t.status)}</span>'
        f"{' - ' + escape(t.error) if t.error else ''}"
        + (
            ' <span class="disagrees">&#x26A0; chaostoolkit disagrees</span>'
            if t.chaos_disagrees
            else ""
        )
        + "</summary>",
        f'<p class="note">namespace <code>{escape(t.namespace or "-")}</code>; injected at'
        f" {escape(injected)}; window {t.heal_window_seconds:g} s"
        + (f"; poll {t.poll_resolution_seconds:g} s" if t.poll_resolution_seconds else "")
        + "</p>",
    ]
    if t.error:
        body.append(f'<p class="problem">error: {escape(t.error)}</p>')
    if t.status == "no-fault":
        body.append(
            '<p class="disagrees">no fault seen: the injection changed nothing the judge checks,'
            " so the fault was not exercised (not counted as healed)</p>"
        )
    body += _heal_lines(t)
    if ev.target or ev.field:
        field = f", field <code>{escape(ev.field)}</code>" if ev.field else ""
        body.append(f"<p>target <b>{escape(ev.target or '-')}</b>{field}</p>")
    fields = ev.model_fields_set
    if fields & {"before", "during", "after"}:
        body.append('<div class="grid">')
        for name, value in (("before", ev.before), ("during", ev.during), ("after", ev.after)):
            body.append(f"<div><b>{name}</b><pre>{_json(value)}</pre></div>")
        body.append("</div>")
    if ev.uids_before is not None or ev.uids_after is not None:
        body.append(_uids(ev.uids_before, ev.uids_after))
    if ev.mismatches_at_end:
        body.append("<p><b>still different at the end:</b></p><ul>")
        body += [f'<li class="problem"><code>{escape(m)}</code></li>' for m in ev.mismatches_at_end]
        body.append("</ul>")
    if ev.cross_check is not None:
        check = ev.cross_check
        if check.disagreements:
            body.append(
                f'<p class="disagrees">&#x26A0; watch cross-check: {len(check.disagreements)}'
                f" of {check.reads} full re-reads disagreed with the watch:</p><ul>"
            )
            body += [f'<li class="disagrees">{escape(d)}</li>' for d in check.disagreements]
            body.append("</ul>")
        else:
            body.append(
                f'<p class="note">watch cross-check: {check.reads} full'
                f" re-read{'' if check.reads == 1 else 's'}, none disagreed</p>"
            )
    extra = ev.model_extra or {}
    if extra:
        body.append(f"<p><b>more evidence</b></p><pre>{_json(extra)}</pre>")
    body.append("</details>")
    return "\n".join(body)


def _heal_lines(t: TrialResult) -> list[str]:
    """First vs settled heal, the flaps, how the fault was seen and chaostoolkit's verdict."""
    ev = t.evidence
    out: list[str] = []
    if ev.fault_seen is not None:
        seen = ev.fault_seen
        detail = f": <code>{escape(seen.detail)}</code>" if seen.detail else ""
        out.append(
            f"<p>fault seen by <b>{escape(seen.how)}</b> at {seconds(seen.at_seconds)}"
            f" after the injection{detail}</p>"
        )
    first, settled = t.time_to_first_heal_seconds, t.time_to_heal_seconds
    if first is not None or settled is not None:
        settle = f" (settle period {ev.settle_seconds:g} s)" if ev.settle_seconds else ""
        out.append(
            f"<p>first heal <b>{secs(first)}</b>; settled heal <b>{secs(settled)}</b>"
            f"{escape(settle)}"
            + (f", {escape(who)}" if (who := written_by(ev.healed_by)) else "")
            + ("; it never settled" if settled is None and t.status == "not-healed" else "")
            + "</p>"
        )
    if ev.flaps:
        out.append(
            f"<p><b>{len(ev.flaps)} flap{'s' if len(ev.flaps) > 1 else ''}</b>"
            " (healed, then drifted again):</p><ul>"
        )
        out += [
            f"<li>healed at {seconds(f.healed_at_seconds)}, drifted at"
            f" {seconds(f.drifted_at_seconds)}"
            + (f": <code>{escape(f.detail)}</code>" if f.detail else "")
            + "</li>"
            for f in ev.flaps
        ]
        out.append("</ul>")
    if ev.chaos_verdict is not None or ev.chaos_agrees is not None:
        if t.chaos_disagrees:
            out.append(
                f'<p class="disagrees">&#x26A0; chaostoolkit disagrees: its experiment ended'
                f" <b>{escape(ev.chaos_verdict or '-')}</b>, we say <b>{escape(t.status)}</b></p>"
            )
        else:
            out.append(f'<p class="note">chaostoolkit: {escape(ev.chaos_verdict or "-")}</p>')
    return out


def _uid_dict(uids: ObjectUids | None) -> dict[str, Any]:
    return {} if uids is None else uids.model_dump(by_alias=True)


def _short(uid: Any) -> str:
    if uid is None:
        return '<span class="changed">absent</span>'
    text = str(uid)
    return f'<code title="{escape(text)}">{escape(text[:8])}</code>'


def _uids(before: ObjectUids | None, after: ObjectUids | None) -> str:
    b, a = _uid_dict(before), _uid_dict(after)
    kinds = [k for k in dict.fromkeys([*b, *a]) if k != "pods"]
    rows = [
        "<table><thead><tr><th>object</th><th>UID before</th><th>UID after</th><th></th>"
        "</tr></thead><tbody>"
    ]
    for kind in kinds:
        old, new = b.get(kind), a.get(kind)
        change = "" if old == new else '<span class="changed">changed</span>'
        if old is not None and new is None:
            change = '<span class="changed">gone</span>'
        rows.append(
            f"<tr><td>{escape(kind)}</td><td>{_short(old)}</td><td>{_short(new)}</td>"
            f"<td>{change}</td></tr>"
        )
    old_pods, new_pods = list(b.get("pods") or []), list(a.get("pods") or [])
    if old_pods or new_pods:
        kept = len(set(old_pods) & set(new_pods))
        fresh = len(set(new_pods) - set(old_pods))
        change = f"{kept} kept, {fresh} new" if fresh or kept != len(old_pods) else "unchanged"
        rows.append(
            f"<tr><td>pods</td><td>{' '.join(_short(p) for p in old_pods) or '-'}</td>"
            f"<td>{' '.join(_short(p) for p in new_pods) or '-'}</td>"
            f'<td><span class="{"changed" if fresh else ""}">{change}</span></td></tr>'
        )
    rows.append("</tbody></table>")
    return "\n".join(rows)
