"""The machine-readable report: per fault and approach statistics as JSON (summaryVersion 1).

Keys are only ever added within a summaryVersion; results.json schemaVersion 2 added the
no-fault counts, first-heal times, flaps and the chaostoolkit / cross-check disagreements.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from compare import inert
from compare.report.data import ReportData
from compare.results import Cell, Times, TrialResult, cell_text

SUMMARY_VERSION = 1


def _times(times: Times | None) -> dict[str, Any] | None:
    return None if times is None else {k: round(v, 6) for k, v in asdict(times).items()}


def _cell(cell: Cell) -> dict[str, Any]:
    return {
        "outcome": cell.outcome,
        "text": cell_text(cell),
        "planned": cell.planned,
        "recorded": cell.recorded,
        "healed": cell.healed,
        "notHealed": cell.not_healed,
        "noFault": cell.no_fault,
        "errors": cell.errors,
        "flapped": cell.flapped,
        "timeToHealSeconds": _times(cell.heal_times),
        "timeToFirstHealSeconds": _times(cell.first_heal_times),
        "timeToDetectSeconds": _times(cell.detect_times),
        "errorMessages": cell.error_messages,
    }


def _trial(t: TrialResult) -> dict[str, Any]:
    return {
        "experiment": t.experiment,
        "approach": t.approach,
        "trial": t.trial,
        "status": t.status,
    }


def summary_json(data: ReportData) -> dict[str, Any]:
    s = data.summary
    r = data.results
    doc: dict[str, Any] = {
        "summaryVersion": SUMMARY_VERSION,
        "runId": r.run_id,
        "results": str(data.source),
        "complete": r.complete,
        "startedAt": r.started_at.isoformat(),
        "finishedAt": r.finished_at.isoformat() if r.finished_at else None,
        "plannedTrials": s.planned_trials,
        "recordedTrials": s.recorded_trials,
        "cluster": r.cluster.model_dump(mode="json", by_alias=True),
        "app": r.app.name,
        "settings": r.settings.model_dump(mode="json", by_alias=True),
        "approaches": [
            {
                "approach": v.approach,
                "faults": v.faults,
                "healed": v.healed,
                "notHealed": v.not_healed,
                "noFault": v.no_fault,
                "mixed": v.mixed,
                "errors": v.errors,
                "notRun": v.missing,
                "medianTimeToHealSeconds": v.median_seconds,
                "verdict": v.text,
                # Who wrote the heals, when the results record it (schema 3, healedBy).
                **(
                    {"healedByApproach": v.by_approach, "healedByKubernetes": v.by_kubernetes}
                    if v.by_approach or v.by_kubernetes
                    else {}
                ),
            }
            for v in s.verdicts.values()
        ],
        "faults": [
            {
                "name": f.name,
                "title": f.title,
                "fault": f.fault,
                "builtin": f.builtin,
                "cells": {
                    a: _cell(c) for a in s.approaches if (c := s.cell(f.name, a)) is not None
                },
            }
            for f in s.faults
        ],
        "noFaultTrials": [_trial(t) for t in s.no_fault_trials],
        "chaosDisagreements": [
            {**_trial(t), "chaosVerdict": t.evidence.chaos_verdict} for t in s.chaos_disagreements
        ],
        "crossCheckDisagreements": [
            {
                **_trial(t),
                "disagreements": t.evidence.cross_check.disagreements
                if t.evidence.cross_check
                else [],
            }
            for t in s.cross_check_disagreements
        ],
    }
    if data.check is not None:
        doc["policy"] = {
            "file": str(data.policy_path) if data.policy_path else None,
            "holds": data.check.holds,
            "checks": len(data.check.verdicts),
            "violations": data.check.violations,
            "notes": data.check.notes,
        }
    return doc


def render_json(data: ReportData) -> str:
    # The same data, its bidi characters and lone surrogates as JSON escapes (`compare.inert`).
    return inert.json_text(json.dumps(summary_json(data), indent=2, ensure_ascii=False)) + "\n"
