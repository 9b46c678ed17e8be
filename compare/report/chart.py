"""The inline SVG chart: time-to-heal per fault and approach, unhealed cases marked in red.

A log time axis, because healing spans two orders of magnitude (a pod back in 0.3 s, drift
fixed after the operator's 7 s outage) and a linear axis would flatten the fast cases to dots.
"""

from __future__ import annotations

import math
from collections.abc import Callable

from compare.inert import html as escape
from compare.results import Cell, RunSummary, cell_text, seconds

APPROACH_COLOURS = ("#2563eb", "#7c3aed", "#0891b2", "#ca8a04", "#db2777")
UNHEALED = "#dc2626"
MUTED = "#6b7280"
NO_FAULT = "#b45309"

LABEL_W = 230
PLOT_W = 470
VALUE_W = 200
BAR_H = 14
BAR_GAP = 4
GROUP_GAP = 14
TOP = 44
BOTTOM = 40
AXIS_MIN = 0.001
AXIS_MAX = 86400.0


def colour_of(summary: RunSummary, approach: str) -> str:
    return APPROACH_COLOURS[summary.approaches.index(approach) % len(APPROACH_COLOURS)]


def _bounds(summary: RunSummary) -> tuple[float, float]:
    """Decade-aligned bounds covering every observed time and the heal window."""
    times = [t.time_to_heal_seconds for t in summary.results.trials if t.time_to_heal_seconds]
    window = max(
        [summary.results.settings.heal_window_seconds]
        + [t.heal_window_seconds for t in summary.results.trials]
    )
    # The axis spans 1 ms to a day at most: a time of 5e-324 or 1.5e308 s (a results file can
    # hold any finite number) is drawn at the edge, not a decade loop of 600 steps or an
    # overflow; every bar is clamped to the axis (`x`).
    low_value = max(min([*times, 0.1]), AXIS_MIN)
    high_value = min(max([*times, window]), AXIS_MAX)
    low = 10 ** math.floor(math.log10(low_value))
    high = 10 ** math.ceil(math.log10(high_value))
    return low, high


def _ticks(low: float, high: float) -> list[float]:
    ticks = []
    decade = low
    while decade <= high * 1.0001:
        ticks += [decade * m for m in (1, 2, 5) if decade * m <= high * 1.0001]
        decade *= 10
    return ticks


def render_chart(summary: RunSummary) -> str:
    """The whole <svg> element (no external references; styles are attributes)."""
    low, high = _bounds(summary)
    span = math.log10(high) - math.log10(low)

    def x(value: float) -> float:
        clamped = min(max(value, low), high)
        return LABEL_W + PLOT_W * (math.log10(clamped) - math.log10(low)) / span

    approaches = summary.approaches
    group_h = len(approaches) * (BAR_H + BAR_GAP) - BAR_GAP
    height = TOP + len(summary.faults) * (group_h + GROUP_GAP) + BOTTOM
    width = LABEL_W + PLOT_W + VALUE_W
    window = summary.results.settings.heal_window_seconds
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}"'
        f' width="{width}" height="{height}" role="img" class="chart"'
        ' aria-label="Time to heal per fault and approach; red hatched bars did not heal"'
        ' font-family="system-ui, sans-serif" font-size="12">',
        "<defs>",
        '<pattern id="unhealed" width="6" height="6" patternUnits="userSpaceOnUse"'
        ' patternTransform="rotate(45)">'
        f'<rect width="6" height="6" fill="{UNHEALED}" fill-opacity="0.15"/>'
        f'<line x1="0" y1="0" x2="0" y2="6" stroke="{UNHEALED}" stroke-width="3"/></pattern>',
        "</defs>",
    ]
    out += _legend(summary)
    plot_bottom = height - BOTTOM
    # Grid and axis.
    for tick in _ticks(low, high):
        tx = x(tick)
        out.append(
            f'<line x1="{tx:.1f}" y1="{TOP - 6}" x2="{tx:.1f}" y2="{plot_bottom}"'
            ' stroke="#e5e7eb"/>'
        )
        out.append(
            f'<text x="{tx:.1f}" y="{plot_bottom + 16}" text-anchor="middle" fill="{MUTED}">'
            f"{tick:g}</text>"
        )
    out.append(
        f'<text x="{LABEL_W + PLOT_W / 2:.1f}" y="{plot_bottom + 34}" text-anchor="middle"'
        f' fill="{MUTED}">time to heal, seconds (log scale)</text>'
    )
    wx = x(window)
    # Trials of an approach with a cadence had a longer window (their own bars end there).
    widened = (
        " (+ cadence)"
        if any(t.heal_window_seconds > window for t in summary.results.trials)
        else ""
    )
    out.append(
        f'<line x1="{wx:.1f}" y1="{TOP - 6}" x2="{wx:.1f}" y2="{plot_bottom}"'
        f' stroke="{UNHEALED}" stroke-dasharray="4 3"/>'
        f'<text x="{wx:.1f}" y="{TOP - 10}" text-anchor="middle" fill="{UNHEALED}">'
        f"heal window {window:g} s{widened}</text>"
    )

    y = TOP
    for fault in summary.faults:
        out.append(
            f'<text x="4" y="{y + group_h / 2 + 4:.1f}" font-weight="600">'
            f"{escape(_clip(fault.name, 26))}<title>{escape(fault.title)}</title></text>"
        )
        for approach in approaches:
            cell = summary.cell(fault.name, approach)
            if cell is not None:
                out += _bar(cell, y, x, colour_of(summary, approach))
            y += BAR_H + BAR_GAP
        y += GROUP_GAP - BAR_GAP
    out.append(
        f'<line x1="{LABEL_W}" y1="{TOP - 6}" x2="{LABEL_W}" y2="{plot_bottom}" stroke="#9ca3af"/>'
    )
    out.append("</svg>")
    return "\n".join(out)


def _legend(summary: RunSummary) -> list[str]:
    items = [(colour_of(summary, a), a, "#111827") for a in summary.approaches]
    items.append(("url(#unhealed)", "NOT healed within the window", UNHEALED))
    out = []
    lx = 4.0
    for fill, label, text_colour in items:
        out.append(
            f'<rect x="{lx:.1f}" y="8" width="12" height="12" fill="{fill}"/>'
            f'<text x="{lx + 16:.1f}" y="18" fill="{text_colour}">{escape(label)}</text>'
        )
        lx += 16 + 7 * len(label) + 18
    out.append(
        f'<text x="{lx:.1f}" y="18" fill="{MUTED}">bar: p50; line: min to max; dots: trials</text>'
    )
    return out


def _bar(cell: Cell, y: float, x: Callable[[float], float], colour: str) -> list[str]:
    mid = y + BAR_H / 2
    tip = escape(f"{cell.approach} / {cell.experiment.name}: {_tooltip(cell)}")
    out = [
        f'<g class="bar" data-outcome="{cell.outcome}"><title>{tip}</title>',
        f'<text x="{LABEL_W - 6}" y="{mid + 4:.1f}" text-anchor="end" fill="{MUTED}"'
        f' font-size="11">{escape(cell.approach)}</text>',
    ]
    label_x = LABEL_W + PLOT_W + 8
    heal = cell.heal_times
    if cell.outcome == "not-healed":
        wx = x(cell.window_seconds)
        out.append(
            f'<rect x="{LABEL_W}" y="{y}" width="{wx - LABEL_W:.1f}" height="{BAR_H}"'
            f' fill="url(#unhealed)" stroke="{UNHEALED}"/>'
        )
        out.append(
            f'<text x="{label_x}" y="{mid + 4:.1f}" fill="{UNHEALED}" font-weight="600">'
            f"NOT healed within {cell.window_seconds:g} s</text>"
        )
    elif heal is not None:
        px = x(heal.p50)
        out.append(
            f'<rect x="{LABEL_W}" y="{y}" width="{max(px - LABEL_W, 1):.1f}" height="{BAR_H}"'
            f' fill="{colour}" fill-opacity="0.85"/>'
        )
        if heal.count > 1:
            out.append(
                f'<line x1="{x(heal.min):.1f}" y1="{mid:.1f}" x2="{x(heal.max):.1f}"'
                f' y2="{mid:.1f}" stroke="#111827" stroke-width="1.5"/>'
            )
        for trial in cell.trials:
            if trial.time_to_heal_seconds is not None:
                out.append(
                    f'<circle cx="{x(trial.time_to_heal_seconds):.1f}" cy="{mid:.1f}" r="2.6"'
                    ' fill="#fff" stroke="#111827"/>'
                )
        label = f"p50 {seconds(heal.p50)}" if heal.count > 1 else seconds(heal.p50)
        colour_text = "#111827"
        if cell.outcome == "mixed":
            failed = cell.recorded - cell.healed
            label = f"healed {cell.healed}/{cell.recorded}, {label}; {failed} not"
            colour_text = UNHEALED
            # The unhealed share is drawn as a hatched stub past the window line.
            wx = x(cell.window_seconds)
            out.append(
                f'<rect x="{wx - 10:.1f}" y="{y}" width="10" height="{BAR_H}"'
                f' fill="url(#unhealed)" stroke="{UNHEALED}"/>'
            )
        out.append(
            f'<text x="{label_x}" y="{mid + 4:.1f}" fill="{colour_text}">{escape(label)}</text>'
        )
    else:
        # error, no-fault (nothing to heal: the injection changed nothing), a mix of those and
        # not-healed trials, or nothing recorded: no bar, the cell's words.
        text = {"missing": "not run", "n/a": "skipped"}.get(cell.outcome) or cell_text(cell)
        fill = {"error": UNHEALED, "mixed": UNHEALED, "no-fault": NO_FAULT}.get(cell.outcome, MUTED)
        out.append(
            f'<text x="{LABEL_W + 6}" y="{mid + 4:.1f}" fill="{fill}" font-style="italic">'
            f"{escape(text)}</text>"
        )
    out.append("</g>")
    return out


def _tooltip(cell: Cell) -> str:
    heal = cell.heal_times
    text = cell_text(cell)
    if heal is not None and heal.count > 1:
        text += f" (min {seconds(heal.min)}, max {seconds(heal.max)})"
    return text


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
