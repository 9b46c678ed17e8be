"""Who healed: each healed trial's `evidence.healedBy` (the field managers of the restoring
writes) in every report, and the summaries' count of heals by the approach apart from those
Kubernetes' own controllers wrote."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from compare.check import evaluate, load_policy
from compare.report import ReportData, ReportFormat, render
from compare.results import load_results, summarize
from tests.results.helpers import POLICY, as_v3, fixture_json, write_run

KUBE = "kube-controller-manager"
OPERATOR = "webapp-operator"


def _attributed() -> dict[str, Any]:
    """The full run, each heal written by who heals it there: pods and ReplicaSets by
    Kubernetes, everything else by the operator."""
    data = as_v3(fixture_json("full-run"))
    for trial in data["trials"]:
        if trial["status"] == "healed":
            kubernetes = trial["evidence"].get("target") in ("pod", "replicaset")
            trial["evidence"]["healedBy"] = [KUBE if kubernetes else OPERATOR]
    return data


def _report(root: Path, data: dict[str, Any], fmt: ReportFormat) -> str:
    run = write_run(root, data)
    source = run / "results.json"
    summary = summarize(load_results(source))
    check = evaluate(load_policy(POLICY), summary) if fmt is ReportFormat.junit else None
    report = ReportData(summary=summary, source=source, output_dir=run, check=check)
    return render(fmt, report)


def test_the_summary_counts_heals_by_the_approach_apart_from_kubernetes(tmp_path: Path) -> None:
    summary = summarize(load_results(write_run(tmp_path, _attributed()) / "results.json"))
    helm, operator = summary.verdicts["helm"], summary.verdicts["operator"]
    # Helm "healed" only what Kubernetes itself heals: pod and ReplicaSet deletions.
    assert helm.healed == helm.by_kubernetes > 0 and helm.by_approach == 0
    assert operator.by_approach > 0 and operator.by_kubernetes == helm.by_kubernetes
    assert operator.by_approach + operator.by_kubernetes == operator.healed
    assert f"({operator.by_approach} by the approach, {operator.by_kubernetes} by Kubernetes" in (
        operator.text
    )


@pytest.mark.parametrize("fmt", [ReportFormat.md, ReportFormat.html, ReportFormat.junit])
def test_every_report_names_who_healed(fmt: ReportFormat, tmp_path: Path) -> None:
    text = _report(tmp_path, _attributed(), fmt)
    assert f"by {KUBE} (Kubernetes itself)" in text
    assert f"by {OPERATOR}" in text
    if fmt is ReportFormat.junit:
        ET.fromstring(text)  # still well-formed


def test_the_json_summary_counts_them(tmp_path: Path) -> None:
    summary = json.loads(_report(tmp_path, _attributed(), ReportFormat.json))
    operator = next(a for a in summary["approaches"] if a["approach"] == "operator")
    assert operator["healedByApproach"] + operator["healedByKubernetes"] == operator["healed"]


def test_results_without_attribution_read_as_before(tmp_path: Path) -> None:
    summary = summarize(
        load_results(write_run(tmp_path, as_v3(fixture_json("full-run"))) / "results.json")
    )
    assert all(v.by_approach == v.by_kubernetes == 0 for v in summary.verdicts.values())
    assert "by the approach" not in summary.verdicts["operator"].text


def test_a_heal_author_on_a_trial_that_did_not_heal_is_refused(tmp_path: Path) -> None:
    data = as_v3(fixture_json("full-run"))
    trial = next(t for t in data["trials"] if t["status"] == "not-healed")
    trial["evidence"]["healedBy"] = [OPERATOR]
    with pytest.raises(Exception, match="healedBy"):
        load_results(write_run(tmp_path, data) / "results.json")
