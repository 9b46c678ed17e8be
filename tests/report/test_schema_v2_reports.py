"""Reports of schemaVersion 2 runs: no-fault, first vs settled heal, flaps, disagreements,
escaping of whatever text a results file holds, and version 1 runs still reported."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from compare.check import evaluate, load_policy, parse_policy
from compare.report import ReportData, ReportFormat, render
from compare.results import RunResults, load_results, summarize
from tests.results.helpers import POLICY, V1_NAMES, fixture, fixture_json

RUN = "no-fault-and-flaps"


def _data(results: RunResults | str = RUN, policy: dict[str, Any] | None = None) -> ReportData:
    if isinstance(results, str):
        source = fixture(results)
        results = load_results(source)
    else:
        source = fixture(RUN)
    summary = summarize(results)
    check = evaluate(parse_policy(policy), summary) if policy is not None else None
    return ReportData(summary, source, check, Path("p.yaml") if policy else None)


# A policy the fixture run partly breaks: helm env-add has a no-fault trial.
POLICY_DOC: dict[str, Any] = {
    "version": 1,
    "expectations": [
        {"approach": "operator", "faults": ["annotation-add"], "expect": "no-fault"},
        {"approach": "helm", "faults": ["annotation-add"], "expect": "no-fault"},
        {"approach": "helm", "faults": ["env-add", "image-change"], "expect": "does-not-heal"},
        {"approach": "operator", "faults": ["image-change"], "expect": "heals", "within": 1},
    ],
}


def _table_cells(text: str, fault: str) -> list[str]:
    row = next(line for line in text.splitlines() if f" {fault} " in line)
    return [c.strip() for c in row.strip("│").split("│")]


def test_table_says_no_fault_plainly_and_never_counts_it_healed() -> None:
    text = render(ReportFormat.table, _data())
    cells = _table_cells(text, "annotation-add")
    assert cells[1] == cells[2] == "no fault seen in 2/2 trials (the injection changed nothing)"
    assert (
        "  helm healed 1/5 faults, median 0.40 s; 2 not healed,"
        " 1 no fault seen (the injection changed nothing), 1 mixed"
    ) in text.splitlines()
    assert (
        "  operator healed 3/5 faults, median 0.17 s;"
        " 1 no fault seen (the injection changed nothing), 1 mixed"
    ) in text.splitlines()
    lines = text.splitlines()
    start = lines.index("No fault seen (not counted as healed)")
    assert lines[start + 1].startswith("  helm/env-add: 1/2 trials saw no fault (trial 2)")
    assert lines[start + 2].startswith(
        "  helm/annotation-add: 2/2 trials saw no fault (trials 1, 2)"
    )


def test_table_lists_chaos_and_cross_check_disagreements() -> None:
    lines = render(ReportFormat.table, _data()).splitlines()
    start = lines.index("chaostoolkit disagrees")
    assert lines[start + 1 : start + 3] == [
        "  operator/env-add trial 2: we say healed, chaostoolkit says deviated",
        "  helm/annotation-add trial 2: we say no-fault, chaostoolkit says deviated",
    ]
    start = lines.index("Watch cross-check disagreements")
    assert lines[start + 1].startswith(
        "  helm/service-port-change trial 1: 1 of 5 re-reads disagreed with the watch (re-read at"
    )


def test_watched_run_has_no_poll_resolution() -> None:
    data = _data()
    assert data.resolution_seconds is None
    assert data.settings_line().endswith("heal window 5 s; settle 1 s; watched (re-read every 2 s)")
    note = data.precision_note()
    assert "settled heal" in note and "settle period (1 s" in note
    assert "timed on receipt (no poll resolution)" in note
    assert "precise to about" not in note
    html = render(ReportFormat.html, data)
    assert "; poll " not in html
    assert "precise to about" not in html


def test_polled_v2_run_states_its_resolution() -> None:
    data = _data("with-errors")
    assert data.resolution_seconds == 0.05
    assert "precise to about 0.05 s" in data.precision_note()
    assert data.settings_line().endswith("heal window 8 s; settle 1 s; poll every 0.05 s")


@pytest.mark.parametrize("name", V1_NAMES)
def test_v1_run_reports_in_every_format(name: str) -> None:
    results = load_results(fixture(name))
    summary = summarize(results)
    check = evaluate(load_policy(POLICY), summary)
    data = ReportData(summary, fixture(name), check, POLICY)
    for fmt in ReportFormat:
        assert render(fmt, data)
    note = data.precision_note()
    assert "first reading that saw the desired state again" in note
    assert "no settle period" in note
    assert "settle" not in data.settings_line()  # version 1 had none
    assert "poll every 0.05 s" in data.settings_line()


def test_markdown_trials_show_first_vs_settled_flaps_and_fault_seen() -> None:
    text = render(ReportFormat.md, _data())
    header = next(
        line for line in text.splitlines() if line.startswith("| fault ") and "flaps" in line
    )
    columns = [h.strip() for h in header.strip("|").split("|")]
    assert columns[3:8] == ["status", "first heal", "settled heal", "flaps", "fault seen"]
    rows = {
        tuple(c.strip() for c in line.strip("|").split("|")[:3]): [
            c.strip() for c in line.strip("|").split("|")
        ]
        for line in text.splitlines()
        if line.startswith("| `")
    }
    flapped = rows[("`image-change`", "operator", "1")]
    assert flapped[4:7] == ["0.12 s", "0.55 s", "1 (healed 0.12 s, drifted 0.30 s)"]
    assert flapped[7].startswith("event at 0.02 s: MODIFIED deployment")
    never = rows[("`service-port-change`", "operator", "1")]
    assert never[3] == "**not-healed**"
    assert never[4:6] == ["0.09 s", "-"]
    assert never[6].startswith("2 (healed 0.09 s, drifted 0.14 s; healed 0.61 s,")
    no_fault = rows[("`annotation-add`", "helm", "2")]
    assert no_fault[3] == "**no-fault**"
    assert no_fault[10] == "**deviated (DISAGREES: we say no-fault)**"
    cross = rows[("`service-port-change`", "helm", "1")]
    assert "cross-check: re-read at 2.01 s" in cross[11]


def test_markdown_summary_sections() -> None:
    text = render(ReportFormat.md, _data(policy=POLICY_DOC))
    assert "**no fault seen in 2/2 trials (the injection changed nothing)**" in text
    assert "## No fault seen (not counted as healed)" in text
    assert "## chaostoolkit disagrees" in text
    assert "- operator/env-add trial 2: we say healed, chaostoolkit says deviated" in text
    assert "## Watch cross-check disagreements" in text
    assert (
        "- helm/env-add: expected not to heal: env-add/helm trial 2: the injection changed"
        " nothing (no-fault), so the fault was not exercised"
    ) in text


HOSTILE = '<img src=x onerror="alert(1)">'


def _hostile_results() -> RunResults:
    data = fixture_json(RUN)
    exp = next(e for e in data["experiments"] if e["name"] == "annotation-add")
    exp["title"] = f"Add {HOSTILE} | *bold* [link](javascript:x)"
    trial = next(t for t in data["trials"] if t["experiment"] == "image-change")
    trial["evidence"]["mismatchesAtEnd"] = [f"deployment.image: want {HOSTILE}"]
    flapped = next(
        t
        for t in data["trials"]
        if (t["experiment"], t["approach"]) == ("image-change", "operator")
    )
    flapped["evidence"]["flaps"][0]["detail"] = HOSTILE
    flapped["evidence"]["faultSeen"]["detail"] = HOSTILE
    port = next(t for t in data["trials"] if t["experiment"] == "service-port-change")
    port["evidence"]["crossCheck"]["disagreements"] = [HOSTILE]
    errored = next(t for t in data["trials"] if t["experiment"] == "env-add")
    errored.update(status="error", error=f"inject failed: {HOSTILE}\nsecond line")
    errored["evidence"]["chaosAgrees"] = None
    return RunResults.from_json(data)


def test_markdown_escapes_raw_html_from_results() -> None:
    text = render(ReportFormat.md, _data(_hostile_results()))
    assert "<img" not in text
    assert '&lt;img src=x onerror="alert(1)"&gt;' in text
    # Every line that is not ours is free of raw tags; ours are the <details> wrapper.
    tags = set(re.findall(r"</?([a-zA-Z]+)", text))
    assert tags == {"details", "summary"}
    # Markdown syntax from the file is shown, not applied; a newline does not break the table.
    assert "\\| \\*bold\\* \\[link\\](javascript:x)" in text
    assert "inject failed: &lt;img" in text
    assert "second line" in text
    # Every row of each table has as many cell separators as its header (no broken rows).
    tables: list[list[str]] = [[]]
    for line in text.splitlines():
        if line.startswith("|"):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    tables = [t for t in tables if t]
    assert len(tables) == 2
    for table in tables:
        assert len({len(re.findall(r"(?<!\\)\|", line)) for line in table}) == 1, table


def test_markdown_code_spans_survive_backticks_and_pipes() -> None:
    data = fixture_json(RUN)
    for section in (data["experiments"], data["trials"]):
        for item in section:
            if item.get("name", item.get("experiment")) == "annotation-add":
                item["name" if "name" in item else "experiment"] = "odd`name|<b>x</b>"
    data["settings"]["experiments"] = [
        "odd`name|<b>x</b>" if n == "annotation-add" else n for n in data["settings"]["experiments"]
    ]
    text = render(ReportFormat.md, _data(RunResults.from_json(data)))
    assert "``odd`name\\|<b>x</b>``" in text  # inside a code span: shown literally


def test_html_escapes_everything_from_results() -> None:
    text = render(ReportFormat.html, _data(_hostile_results()))
    assert "<img" not in text
    assert text.count("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;") >= 5


def test_html_trial_evidence_shows_heals_flaps_fault_seen_and_disagreement() -> None:
    text = render(ReportFormat.html, _data())
    assert "<th>first heal</th><th>settled heal</th><th>flaps</th><th>fault seen</th>" in text
    assert "first heal <b>0.12 s</b>; settled heal <b>0.55 s</b> (settle period 1 s)" in text
    assert (
        "first heal <b>0.09 s</b>; settled heal <b>-</b> (settle period 1 s); it never settled"
    ) in text
    assert "<b>2 flaps</b> (healed, then drifted again)" in text
    assert "<li>healed at 0.12 s, drifted at 0.30 s: <code>" in text
    assert "fault seen by <b>event</b> at 0.02 s after the injection" in text
    assert (
        '<p class="disagrees">&#x26A0; chaostoolkit disagrees: its experiment ended'
        " <b>deviated</b>, we say <b>healed</b></p>"
    ) in text
    assert "&#x26A0; chaostoolkit disagrees</span></summary>" in text
    assert "watch cross-check: 1 of 5 full re-reads disagreed with the watch" in text
    assert "watch cross-check: 1 full re-read, none disagreed" in text
    assert "no fault seen: the injection changed nothing the judge checks" in text
    assert '<td class="no-fault"><a href="#cell-annotation-add-helm">no fault seen in 2/2' in text
    # The verdict area lists the disagreements and the no-fault cells.
    verdict = text[text.index("<h2>Verdict</h2>") : text.index("<h2>Results</h2>")]
    assert "<h3>chaostoolkit disagrees</h3>" in verdict
    assert "operator/env-add trial 2: we say healed, chaostoolkit says deviated" in verdict
    assert "<h3>No fault seen (not counted as healed)</h3>" in verdict
    assert '<div class="big">1/5 faults healed</div>' in verdict


def test_html_chart_marks_no_fault_cells() -> None:
    text = render(ReportFormat.html, _data())
    svg = text[text.index("<svg") : text.index("</svg>") + len("</svg>")]
    chart = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    bars = chart.findall(f".//{ns}g[@class='bar']")
    outcomes = sorted({b.get("data-outcome") or "" for b in bars})
    assert outcomes == ["healed", "mixed", "no-fault", "not-healed"]
    assert "no fault seen in 2/2 trials (the injection changed nothing)" in svg


def test_json_summary_counts_no_fault_apart() -> None:
    doc = json.loads(render(ReportFormat.json, _data(policy=POLICY_DOC)))
    helm = next(a for a in doc["approaches"] if a["approach"] == "helm")
    assert (helm["faults"], helm["healed"], helm["noFault"], helm["mixed"]) == (5, 1, 1, 1)
    fault = next(f for f in doc["faults"] if f["name"] == "annotation-add")
    cell = fault["cells"]["operator"]
    assert (cell["outcome"], cell["healed"], cell["noFault"]) == ("no-fault", 0, 2)
    assert cell["timeToHealSeconds"] is None
    image = next(f for f in doc["faults"] if f["name"] == "image-change")["cells"]["operator"]
    assert image["timeToFirstHealSeconds"]["min"] == 0.118
    assert image["timeToHealSeconds"]["max"] == 0.552
    assert image["flapped"] == 1
    assert doc["chaosDisagreements"] == [
        {
            "experiment": "env-add",
            "approach": "operator",
            "trial": 2,
            "status": "healed",
            "chaosVerdict": "deviated",
        },
        {
            "experiment": "annotation-add",
            "approach": "helm",
            "trial": 2,
            "status": "no-fault",
            "chaosVerdict": "deviated",
        },
    ]
    assert len(doc["noFaultTrials"]) == 5
    assert doc["crossCheckDisagreements"][0]["experiment"] == "service-port-change"
    assert doc["settings"]["settleSeconds"] == 1.0
    assert doc["settings"]["pollIntervalSeconds"] is None


def _cases(root: ET.Element) -> dict[tuple[str, str], ET.Element]:
    return {(c.get("classname") or "", c.get("name") or ""): c for c in root.iter("testcase")}


def test_junit_no_fault_is_skipped_and_broken_expectations_fail() -> None:
    data = _data(policy=POLICY_DOC)
    assert data.check is not None
    root = ET.fromstring(render(ReportFormat.junit, data))
    cases = _cases(root)
    for approach in ("helm", "operator"):
        case = cases[(f"self-healing.{approach}", "annotation-add")]
        skipped = case.find("skipped")
        assert skipped is not None
        assert case.find("failure") is None
        assert skipped.get("message") == (
            "no fault seen: the injection changed nothing, so the fault was not exercised"
            " (2/2 trials: 1, 2)"
        )
    env = cases[("self-healing.helm", "env-add")]
    failure = env.find("failure")
    assert failure is not None and env.find("skipped") is None
    assert "env-add/helm trial 2: the injection changed nothing (no-fault)" in (
        failure.get("message") or ""
    )
    # The failures are exactly compare check's violations.
    failures = [f for c in root.iter("testcase") if (f := c.find("failure")) is not None]
    messages = sorted(f.get("message") or "" for f in failures)
    assert messages == sorted(data.check.violations)
    out = cases[("self-healing.operator", "image-change")].findtext("system-out") or ""
    assert "trial 1: healed in 0.552 s (first heal 0.118 s), 1 flap" in out
    out = cases[("self-healing.operator", "env-add")].findtext("system-out") or ""
    assert "trial 2: healed in 0.171 s; chaostoolkit disagrees (deviated)" in out
    helm = next(s for s in root.findall("testsuite") if s.get("name") == "self-healing.helm")
    assert helm.get("skipped") == "1"


def test_junit_uncovered_no_fault_cell_is_skipped_too() -> None:
    policy = {
        "version": 1,
        "expectations": [{"approach": "operator", "faults": ["pod-delete-one"], "expect": "heals"}],
    }
    root = ET.fromstring(render(ReportFormat.junit, _data(policy=policy)))
    case = _cases(root)[("self-healing.helm", "annotation-add")]
    skipped = case.find("skipped")
    assert skipped is not None
    assert "the injection changed nothing" in (skipped.get("message") or "")
    assert root.get("failures") == "0"
