"""JUnit XML: each (fault, approach) is a testcase and a broken expectation is its failure.

Any CI system (GitHub test-report actions, GitLab, Jenkins) can then show a regression as a
failed test. Cells no expectation covers pass if nothing went wrong and are skipped (not judged)
otherwise, so errors stay visible without failing the gate `compare check` defines. A cell with
no-fault trials (the injection changed nothing) that no expectation breaks is skipped too: the
fault was not exercised, so there is nothing to pass.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from compare import inert
from compare.check import CheckResult
from compare.report.data import ReportData
from compare.results import Cell, cell_text
from compare.results.writers import written_by

NO_FAULT_MESSAGE = "no fault seen: the injection changed nothing, so the fault was not exercised"


def _testcase(suite: ET.Element, classname: str, name: str, seconds: float) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=classname, name=name, time=f"{seconds:.3f}")


def _cell_out(cell: Cell | None, data: ReportData) -> str:
    if cell is None:
        return "not in this run"
    lines = [f"observed: {cell_text(cell)}"]
    for t in cell.trials:
        time = f" in {t.time_to_heal_seconds:.3f} s" if t.time_to_heal_seconds is not None else ""
        if t.evidence.healed_by:
            time += f" {written_by(t.evidence.healed_by)}"
        first = t.time_to_first_heal_seconds
        if first is not None and first != t.time_to_heal_seconds:
            time += f" (first heal {first:.3f} s)"
        if t.evidence.flaps:
            flaps = len(t.evidence.flaps)
            time += f", {flaps} flap{'s' if flaps > 1 else ''}"
        extra = f": {t.error}" if t.error else ""
        if t.status == "no-fault":
            extra = ": the injection changed nothing, so the fault was not exercised"
        if t.chaos_disagrees:
            extra += f"; chaostoolkit disagrees ({t.evidence.chaos_verdict})"
        journal = data.journal_href(t)
        lines.append(
            f"trial {t.trial}: {t.status}{time}{extra}"
            + (f" (journal {journal})" if journal else "")
        )
        lines += [f"  mismatch at end: {m}" for m in t.evidence.mismatches_at_end]
    return "\n".join(lines)


def render_junit(data: ReportData, check: CheckResult) -> str:
    s = data.summary
    root = ET.Element("testsuites", name=f"compare {data.results.run_id}")
    suites: dict[str, ET.Element] = {}

    def suite_of(approach: str) -> ET.Element:
        if approach not in suites:
            suites[approach] = ET.SubElement(root, "testsuite", name=f"self-healing.{approach}")
        return suites[approach]

    if check.run_problems:
        run_suite = ET.SubElement(root, "testsuite", name="self-healing.run")
        case = _testcase(run_suite, "self-healing.run", "run is complete", 0.0)
        for problem in check.run_problems:
            ET.SubElement(case, "failure", message=problem, type="incomplete-run").text = problem

    judged = {(v.fault, v.approach) for v in check.verdicts}
    # Cells in the run first (run order), then faults the policy names but the run lacks.
    keys = [(f.name, a) for f in s.faults for a in s.approaches]
    keys += sorted(judged - set(keys))
    for fault, approach in keys:
        cell = s.cell(fault, approach)
        verdicts = check.verdicts_for(fault, approach)
        if cell is not None and not cell.applicable and not verdicts:
            continue
        heal = cell.heal_times if cell is not None else None
        case = _testcase(
            suite_of(approach), f"self-healing.{approach}", fault, heal.max if heal else 0.0
        )
        broken = [v for v in verdicts if not v.ok]
        if broken:
            message = "; ".join(v.line for v in broken)
            body = [v.line for v in broken]
            body += [
                f"policy reason: {v.expectation.reason}" for v in broken if v.expectation.reason
            ]
            ET.SubElement(case, "failure", message=message, type="policy").text = "\n".join(body)
        elif cell is not None and cell.no_fault:
            trials = ", ".join(str(t.trial) for t in cell.trials if t.status == "no-fault")
            ET.SubElement(
                case,
                "skipped",
                message=f"{NO_FAULT_MESSAGE} ({cell.no_fault}/{cell.recorded} trials: {trials})",
            )
        elif not verdicts and cell is not None and (cell.errors or cell.outcome == "missing"):
            ET.SubElement(case, "skipped", message=f"not covered by the policy; {cell_text(cell)}")
        ET.SubElement(case, "system-out").text = "\n".join(
            [v.line for v in verdicts if v.ok] + [_cell_out(cell, data)]
        )

    for suite in root.iter("testsuite"):
        cases = suite.findall("testcase")
        suite.set("tests", str(len(cases)))
        suite.set("failures", str(sum(1 for c in cases if c.find("failure") is not None)))
        suite.set("errors", "0")
        suite.set("skipped", str(sum(1 for c in cases if c.find("skipped") is not None)))
        suite.set("time", f"{sum(float(c.get('time', '0')) for c in cases):.3f}")
    root.set("tests", str(sum(int(x.get("tests", "0")) for x in root)))
    root.set("failures", str(sum(int(x.get("failures", "0")) for x in root)))
    # Every text and attribute through the one output layer: an error message quoting a
    # terminal holds control characters XML forbids, a title may hold `]]>`.
    for element in root.iter():
        if element.text:
            element.text = inert.junit(element.text)
        for key, value in element.attrib.items():
            element.set(key, inert.junit(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
