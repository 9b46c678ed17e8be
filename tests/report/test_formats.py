"""Every report format, rendered from the recorded results files alone."""

from __future__ import annotations

import json
import os
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from compare.check import evaluate, load_policy
from compare.report import ReportData, ReportFormat, render
from compare.results import RunResults, load_results, summarize
from compare.results.migrate import upgrade
from tests.results.helpers import NAMES, POLICY, fixture, fixture_json


def _data(name: str, *, policy: bool = False, output_dir: Path | None = None) -> ReportData:
    source = fixture(name)
    summary = summarize(load_results(source))
    check = evaluate(load_policy(POLICY), summary) if policy else None
    return ReportData(
        summary=summary,
        source=source,
        check=check,
        policy_path=POLICY if policy else None,
        output_dir=output_dir,
    )


def test_table_rows_cells_and_verdicts() -> None:
    text = render(ReportFormat.table, _data("full-run"))
    lines = text.splitlines()
    assert lines[0].startswith("run 20261202T120000Z-ab12, started 2026-12-02 12:00:00 UTC")
    row = next(line for line in lines if " image-change " in line)
    cells = [c.strip() for c in row.strip("│").split("│")]
    assert cells[0] == "image-change"
    assert cells[1] == "NOT healed within 10 s"
    assert re.fullmatch(r"healed p50 \d\.\d\d s, p95 \d\.\d\d s", cells[2])
    drift = next(line for line in lines if " operator-down-drift " in line)
    # A cell with no trials is never a bare n/a: skipped, numbered, its reason listed below.
    assert "n/a" not in text and "skipped [1]" in drift
    assert (
        "  [1] helm/operator-down-drift: not planned for helm (the experiment applies to"
        " operator)" in lines
    )
    assert "  operator healed 13/13 faults, median 0.44 s" in lines
    assert "  helm healed 3/12 faults, median 0.67 s; 9 not healed" in lines


def test_table_of_interrupted_run_warns_and_marks_missing() -> None:
    text = render(ReportFormat.table, _data("interrupted"))
    assert "!! This run is incomplete: 17 of 50 planned trials were recorded" in text
    assert "NOT healed within 10 s [1 of 2 trials run]" in text
    assert text.count("not run") >= 15


def test_table_lists_errors_and_policy_violations() -> None:
    text = render(ReportFormat.table, _data("with-errors", policy=True))
    assert "helm/deployment-delete: 3/3 trials ended in error (trial 1: helm install failed" in text
    assert "BROKEN (13 of 19 checks)" in text
    assert "  x operator/pod-delete-one: expected to heal within 5 s (max)" in text


def test_markdown_is_a_github_table() -> None:
    text = render(ReportFormat.md, _data("with-errors", policy=True))
    assert text.startswith("# Helm vs operator: self-healing report\n")
    header = next(line for line in text.splitlines() if line.startswith("| fault"))
    assert [h.strip() for h in header.strip("|").split("|")] == ["fault", "helm", "operator"]
    assert re.search(r"^\| Change the container image \(`image-change`\) +\|", text, re.M)
    assert "**healed 2/3, p50 0.40 s; 1 error**" in text
    assert "- **operator**: operator healed 3/6 faults" in text
    assert "## Policy" in text
    # Every trial is listed once in the details table.
    trial_rows = [line for line in text.splitlines() if re.match(r"\| `[a-z-]+` +\| \w", line)]
    assert len(trial_rows) == 36


def test_markdown_escapes_table_breaking_characters() -> None:
    data = _data("with-errors")
    trial = next(t for t in data.results.trials if t.status == "error")
    trial.error = "boom | with a pipe"
    text = render(ReportFormat.md, data)
    assert "boom \\| with a pipe" in text


def test_json_summary_per_fault_and_approach() -> None:
    doc = json.loads(render(ReportFormat.json, _data("with-errors", policy=True)))
    assert doc["summaryVersion"] == 1
    assert doc["runId"] == "20261203T081500Z-c3d4"
    assert [a["approach"] for a in doc["approaches"]] == ["helm", "operator"]
    fault = next(f for f in doc["faults"] if f["name"] == "image-change")
    op = fault["cells"]["operator"]
    assert (op["outcome"], op["recorded"], op["healed"], op["errors"]) == ("mixed", 3, 2, 1)
    assert op["timeToHealSeconds"]["count"] == 2
    assert op["errorMessages"][0].startswith("trial 2: inject failed")
    assert doc["policy"]["holds"] is False
    assert len(doc["policy"]["violations"]) == 13
    custom = next(f for f in doc["faults"] if f["name"] == "configmap-drift")
    assert custom["builtin"] is False


def test_json_without_policy_has_no_policy_key() -> None:
    doc = json.loads(render(ReportFormat.json, _data("full-run")))
    assert "policy" not in doc
    helm = doc["approaches"][0]
    assert (helm["faults"], helm["healed"], helm["notHealed"]) == (12, 3, 9)


def _junit(name: str) -> ET.Element:
    return ET.fromstring(render(ReportFormat.junit, _data(name, policy=True)))


def test_junit_passes_when_policy_holds() -> None:
    root = _junit("full-run")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert set(suites) == {"self-healing.helm", "self-healing.operator"}
    assert suites["self-healing.operator"].get("tests") == "13"
    assert suites["self-healing.helm"].get("tests") == "12"
    assert root.get("failures") == "0"
    assert root.findall(".//failure") == []


def test_junit_failures_are_policy_violations() -> None:
    root = _junit("with-errors")
    failed = {
        (c.get("classname"), c.get("name")): c.find("failure")
        for c in root.iter("testcase")
        if c.find("failure") is not None
    }
    assert root.get("failures") == "13"
    assert len(failed) == 13
    error_case = failed[("self-healing.operator", "image-change")]
    assert error_case is not None
    assert "ended in error" in (error_case.get("message") or "")
    # Faults the policy names but the run lacks are failing testcases too.
    assert ("self-healing.helm", "service-delete") in failed
    # A cell nothing covers but with errors would be skipped; configmap-drift (helm) passes.
    configmap = next(
        c
        for c in root.iter("testcase")
        if c.get("name") == "configmap-drift" and c.get("classname") == "self-healing.helm"
    )
    assert configmap.find("failure") is None
    out = configmap.findtext("system-out") or ""
    assert "observed: NOT healed within 8 s" in out


def test_junit_incomplete_run_is_a_failure() -> None:
    root = _junit("interrupted")
    run_suite = next(s for s in root.findall("testsuite") if s.get("name") == "self-healing.run")
    assert run_suite.get("failures") == "1"


def test_junit_strips_characters_xml_cannot_hold() -> None:
    data = _data("with-errors", policy=True)
    trial = next(t for t in data.results.trials if t.status == "error")
    trial.error = "colour \x1b[31mred\x1b[0m"
    check = evaluate(load_policy(POLICY), summarize(data.results))
    text = render(ReportFormat.junit, ReportData(data.summary, data.source, check))
    ET.fromstring(text)  # parses
    assert "\x1b" not in text


@pytest.mark.parametrize("name", NAMES)
def test_html_is_self_contained(name: str) -> None:
    text = render(ReportFormat.html, _data(name, policy=True))
    assert text.startswith("<!DOCTYPE html>")
    assert "Content-Security-Policy" in text
    # No fetch of anything: the only URL is the SVG namespace, which is never fetched.
    urls = set(re.findall(r"""(?:src|href|url)\s*[=(]\s*["']?([^"')\s>]+)""", text))
    assert all(not u.startswith(("http:", "https:", "//")) for u in urls), urls
    # Beyond the SVG namespace, a URL may only appear as text: the cluster's server address.
    server = load_results(fixture(name)).cluster.server
    rest = text.replace(server, "").replace("http://www.w3.org/2000/svg", "")
    assert re.findall(r"https?://", rest) == []
    assert "<link" not in text
    assert "@import" not in text


def test_html_shows_evidence_chart_and_journal_links(tmp_path: Path) -> None:
    text = render(ReportFormat.html, _data("with-errors", policy=True, output_dir=tmp_path))
    svg = text[text.index("<svg") : text.index("</svg>") + len("</svg>")]
    chart = ET.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    bars = chart.findall(f".//{ns}g[@class='bar']")
    assert len(bars) == 6 * 2  # every fault x approach
    assert sorted({b.get("data-outcome") or "" for b in bars}) == [
        "error",
        "healed",
        "mixed",
        "not-healed",
    ]
    assert "NOT healed within 8 s" in svg
    # Evidence of one trial: UIDs, before/during/after, mismatches, journal link.
    trial = next(t for t in load_results(fixture("with-errors")).trials if t.status == "not-healed")
    assert trial.evidence.uids_before is not None
    assert trial.evidence.uids_before.deployment is not None
    assert trial.evidence.uids_before.deployment[:8] in text
    assert trial.evidence.mismatches_at_end[0].replace("'", "&#x27;") in text
    journal = fixture("with-errors").parent / "journals" / "deployment-scale-zero-helm-1.json"
    rel = Path(os.path.relpath(journal, tmp_path)).as_posix()
    assert f'href="{rel}"' in text
    assert "<b>before</b>" in text and "<b>during</b>" in text and "<b>after</b>" in text
    assert "1 cells not covered by the policy" in text


def test_a_run_interrupted_before_any_trial_renders_every_format(tmp_path: Path) -> None:
    data = fixture_json("interrupted")
    data["trials"] = []
    results = RunResults.from_json(data)
    summary = summarize(results)
    check = evaluate(load_policy(POLICY), summary)
    report = ReportData(summary, fixture("interrupted"), check, POLICY, tmp_path)
    for fmt in ReportFormat:
        assert render(fmt, report)
    assert "helm healed 0/12 faults; 12 not run" in render(ReportFormat.table, report)
    assert "run is complete" in render(ReportFormat.junit, report)


def test_the_experiments_left_out_are_listed_with_their_reason_in_every_text_format(
    tmp_path: Path,
) -> None:
    # A run against the built-in WebApp leaves out the faults on parts it has not.
    data = fixture_json("full-run")
    reason = "needs a ConfigMap (the app's manifest has none)"
    data["skipped"] = [{"name": "configmap-delete", "reason": reason}]
    results = RunResults.from_json(data)
    report = ReportData(summarize(results), fixture("full-run"), None, None, tmp_path)
    line = f"configmap-delete: {reason}"
    table = render(ReportFormat.table, report)
    assert f"Skipped (not run against this app or cluster)\n  {line}" in table
    assert "configmap-delete: needs a ConfigMap (the app's manifest has none)" in render(
        ReportFormat.md, report
    ).replace("\\", "")
    assert "configmap-delete: needs a ConfigMap (the app&#x27;s manifest has none)" in render(
        ReportFormat.html, report
    )
    # Without skips nothing is said: the run without its operator-only fault.
    doc = fixture_json("full-run")
    only = "operator-down-drift"
    doc["experiments"] = [e for e in doc["experiments"] if e["name"] != only]
    doc["settings"]["experiments"] = [e for e in doc["settings"]["experiments"] if e != only]
    doc["trials"] = [t for t in doc["trials"] if t["experiment"] != only]
    every = ReportData(summarize(RunResults.from_json(doc)), fixture("full-run"))
    assert "Skipped" not in render(ReportFormat.table, every)


def test_a_run_stopped_in_its_preflight_says_why_in_every_format(tmp_path: Path) -> None:
    # Its results.json: no trial, not complete, the preflight's line (`compare run` writes it).
    doc = fixture_json("interrupted")
    why = "preflight of the operator arm: no operator is reconciling Cache ns/sessions"
    doc.update(trials=[], complete=False, preflightError=why)
    (tmp_path / "results.json").write_text(json.dumps(doc))
    results = load_results(tmp_path)
    assert results.preflight_error == why and results.to_json()["preflightError"] == why
    data = ReportData(summary=summarize(results), source=tmp_path)
    line = f"This run stopped in its preflight, before any trial: {why}"
    assert f"!! {line}" in render(ReportFormat.table, data)
    assert line in render(ReportFormat.md, data)
    # A run that did not stop there has no such key.
    assert "preflightError" not in load_results(fixture("interrupted")).to_json()


def test_an_arm_its_preflight_left_out_is_listed_with_its_finding(tmp_path: Path) -> None:
    # The run went on with its other arms: results.json keeps the finding, every format says it.
    doc = upgrade(fixture_json("full-run"))
    finding = (
        "Argo CD rewrites secret.data.admin-password on every sync"
        " (the chart renders a new value each time)"
    )
    doc["preflightFindings"] = [{"approach": "argocd", "finding": finding}]
    (tmp_path / "results.json").write_text(json.dumps(doc))
    results = load_results(tmp_path)
    assert results.to_json()["preflightFindings"] == doc["preflightFindings"]
    data = ReportData(summary=summarize(results), source=tmp_path)
    line = f"argocd arm: {finding}"
    assert f"Skipped (not run against this app or cluster)\n  {line}" in render(
        ReportFormat.table, data
    )
    assert line in render(ReportFormat.html, data)
    # A run that left no arm out has no such key.
    assert "preflightFindings" not in load_results(fixture("full-run")).to_json()


def test_a_cell_skipped_for_an_approach_says_why_in_every_format(tmp_path: Path) -> None:
    # The run's reason (`experiments[].skippedFor`): that approach's arm deploys no ConfigMap.
    doc = upgrade(fixture_json("full-run"))
    reason = "needs a ConfigMap (the app's manifest has none)"
    drift = next(e for e in doc["experiments"] if e["name"] == "operator-down-drift")
    drift["skippedFor"] = {"helm": reason}
    results = RunResults.from_json(doc)
    assert results.to_json()["experiments"][-1]["skippedFor"] == {"helm": reason}
    data = ReportData(summarize(results), fixture("full-run"), None, None, tmp_path)
    table = render(ReportFormat.table, data)
    row = next(line for line in table.splitlines() if " operator-down-drift " in line)
    assert "skipped [1]" in row
    assert f"  [1] helm/operator-down-drift: {reason}" in table
    md = render(ReportFormat.md, data).replace("\\", "")
    assert "skipped [1]" in md and f"[1] helm/operator-down-drift: {reason}" in md
    html = render(ReportFormat.html, data)
    shown = reason.replace("'", "&#x27;")
    assert f'title="{shown}">skipped [1]</a>' in html
    summary = json.loads(render(ReportFormat.json, data))
    cell = next(f for f in summary["faults"] if f["name"] == "operator-down-drift")["cells"]
    assert cell["helm"]["text"] == f"skipped: {reason}"
    assert "n/a" not in table and "n/a" not in md and ">n/a<" not in html
