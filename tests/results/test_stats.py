"""Cells, percentiles and verdicts computed from the recorded fixtures."""

from __future__ import annotations

import statistics

import pytest

from compare.results import RunResults, cell_text, load_results, percentile, summarize
from compare.results.stats import Times
from tests.results.helpers import fixture, fixture_json


def test_percentile_interpolates_between_ranks() -> None:
    assert percentile([3.0], 95) == 3.0
    assert percentile([1.0, 2.0, 3.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0], 95) == pytest.approx(2.9)
    assert percentile([4.0, 1.0, 3.0, 2.0], 50) == pytest.approx(2.5)
    with pytest.raises(ValueError):
        percentile([], 50)


def test_full_run_cells_match_the_recorded_trials() -> None:
    results = load_results(fixture("full-run"))
    s = summarize(results)
    assert s.approaches == ["helm", "operator"]
    assert [f.name for f in s.faults] == results.settings.experiments
    cell = s.cell("pod-delete-one", "helm")
    assert cell is not None
    times = [
        t.time_to_heal_seconds
        for t in results.trials
        if t.experiment == "pod-delete-one" and t.approach == "helm"
    ]
    assert cell.outcome == "healed"
    assert cell.heal_times == Times.of([t for t in times if t is not None])
    assert cell.heal_times is not None
    assert cell.heal_times.p50 == statistics.median(t for t in times if t is not None)
    drift = s.cell("image-change", "helm")
    assert drift is not None
    assert drift.outcome == "not-healed"
    assert cell_text(drift) == "NOT healed within 10 s"
    na = s.cell("operator-down-drift", "helm")
    assert na is not None
    assert na.outcome == "n/a"
    assert na.planned == 0
    assert s.planned_trials == s.recorded_trials == 75


def test_verdicts_count_faults_and_median() -> None:
    results = load_results(fixture("full-run"))
    s = summarize(results)
    operator = s.verdicts["operator"]
    helm = s.verdicts["helm"]
    assert (operator.faults, operator.healed) == (13, 13)
    assert (helm.faults, helm.healed, helm.not_healed) == (12, 3, 9)
    op_times = [
        t.time_to_heal_seconds
        for t in results.trials
        if t.approach == "operator" and t.time_to_heal_seconds is not None
    ]
    assert operator.median_seconds == statistics.median(op_times)
    assert operator.text.startswith("operator healed 13/13 faults, median ")
    assert helm.text.endswith("; 9 not healed")


def test_errors_and_mixed_outcomes() -> None:
    s = summarize(load_results(fixture("with-errors")))
    image = s.cell("image-change", "operator")
    assert image is not None
    assert (image.outcome, image.healed, image.errors) == ("mixed", 2, 1)
    assert cell_text(image).startswith("healed 2/3, p50 ")
    assert cell_text(image).endswith("; 1 error")
    selector = s.cell("service-selector-change", "operator")
    assert selector is not None
    assert cell_text(selector).endswith("; 1 NOT healed")
    deleted = s.cell("deployment-delete", "helm")
    assert deleted is not None
    assert deleted.outcome == "error"
    assert cell_text(deleted) == "error (3/3 trials)"
    assert deleted.error_messages[0].startswith("trial 1: helm install failed")
    custom = next(f for f in s.faults if f.name == "configmap-drift")
    assert custom.builtin is False
    assert s.verdicts["helm"].text == "helm healed 1/6 faults, median 0.35 s; 4 not healed, 1 error"


def test_interrupted_run_marks_missing_and_partial_cells() -> None:
    s = summarize(load_results(fixture("interrupted")))
    partial = s.cell("env-add", "helm")
    assert partial is not None
    assert (partial.recorded, partial.planned, partial.missing_trials) == (1, 2, 1)
    assert cell_text(partial) == "NOT healed within 10 s [1 of 2 trials run]"
    missing = s.cell("service-delete", "operator")
    assert missing is not None
    assert missing.outcome == "missing"
    assert cell_text(missing) == "not run"
    assert s.recorded_trials == 17
    assert s.planned_trials == 50
    assert s.verdicts["operator"].missing == 9


def test_single_trial_cells_have_no_p95() -> None:
    s = summarize(load_results(fixture("single-trial")))
    cell = s.cell("pod-delete-one", "operator")
    assert cell is not None
    assert cell_text(cell).startswith("healed in ")
    assert "p95" not in cell_text(cell)


def test_fault_asked_for_but_never_described_gets_a_row() -> None:
    data = fixture_json("interrupted")
    data["settings"]["experiments"].append("my-own-fault")
    s = summarize(RunResults.from_json(data))
    cell = s.cell("my-own-fault", "operator")
    assert cell is not None
    assert cell.outcome == "missing"


def test_trials_of_an_unlisted_approach_still_count() -> None:
    data = fixture_json("single-trial")
    drift = next(e for e in data["experiments"] if e["name"] == "operator-down-drift")
    assert drift["approaches"] == ["operator"]
    drift["approaches"] = ["helm"]  # the file disagrees with its own trials
    s = summarize(RunResults.from_json(data))
    cell = s.cell("operator-down-drift", "operator")
    assert cell is not None
    assert (cell.outcome, cell.planned, cell.recorded) == ("healed", 0, 1)
    assert s.cell("operator-down-drift", "helm") is not None
    assert s.verdicts["operator"].faults == 4


def test_real_recording_shows_helm_heals_only_what_kubernetes_heals() -> None:
    s = summarize(load_results(fixture("recorded-helm")))
    assert s.approaches == ["helm"]
    healed = {f.name for f in s.faults if (c := s.cell(f.name, "helm")) and c.outcome == "healed"}
    assert healed == {"pod-delete-one", "pod-delete-all", "replicaset-delete"}
    assert s.verdicts["helm"].text.startswith("helm healed 3/12 faults, median ")


# --- schemaVersion 2: no-fault, first vs settled heal, flaps, disagreements ------------------


def test_no_fault_cells_are_never_healed() -> None:
    s = summarize(load_results(fixture("no-fault-and-flaps")))
    annotation = s.cell("annotation-add", "helm")
    assert annotation is not None
    assert (annotation.outcome, annotation.healed, annotation.no_fault) == ("no-fault", 0, 2)
    assert annotation.heal_times is None
    assert cell_text(annotation) == "no fault seen in 2/2 trials (the injection changed nothing)"
    helm, operator = s.verdicts["helm"], s.verdicts["operator"]
    # helm: pod-delete-one healed; image-change, service-port-change not; env-add mixed
    # (1 not healed, 1 no-fault); annotation-add no-fault.
    assert (helm.faults, helm.healed, helm.not_healed, helm.no_fault, helm.mixed) == (5, 1, 2, 1, 1)
    assert helm.text == (
        "helm healed 1/5 faults, median 0.40 s; 2 not healed,"
        " 1 no fault seen (the injection changed nothing), 1 mixed"
    )
    assert (operator.healed, operator.no_fault, operator.mixed) == (3, 1, 1)
    # The median is over settled heals only: no-fault trials have none.
    assert operator.median_seconds == statistics.median(
        [0.297, 0.301, 0.552, 0.131, 0.164, 0.171, 0.088]
    )


def test_one_no_fault_trial_makes_a_mixed_cell() -> None:
    s = summarize(load_results(fixture("no-fault-and-flaps")))
    env = s.cell("env-add", "helm")
    assert env is not None
    assert (env.outcome, env.not_healed, env.no_fault) == ("mixed", 1, 1)
    assert cell_text(env) == "healed 0/2; 1 NOT healed; 1 no fault seen"


def test_single_no_fault_trial_text() -> None:
    data = fixture_json("no-fault-and-flaps")
    data["trials"] = [t for t in data["trials"] if t["trial"] == 1]
    data["settings"]["trials"] = 1
    cell = summarize(RunResults.from_json(data)).cell("annotation-add", "operator")
    assert cell is not None
    assert cell_text(cell) == "no fault seen (the injection changed nothing)"


def test_first_and_settled_heal_times_and_flaps() -> None:
    s = summarize(load_results(fixture("no-fault-and-flaps")))
    image = s.cell("image-change", "operator")
    assert image is not None
    assert image.heal_times == Times.of([0.552, 0.131])
    assert image.first_heal_times == Times.of([0.118, 0.131])
    assert image.flapped == 1
    assert cell_text(image) == "healed p50 0.34 s, p95 0.53 s (1/2 flapped first)"
    port = s.cell("service-port-change", "operator")
    assert port is not None
    assert (port.outcome, port.healed_briefly, port.flapped) == ("mixed", 1, 1)
    # First heals count every trial that saw one, healed or not.
    assert port.first_heal_times == Times.of([0.092, 0.088])
    assert port.heal_times == Times.of([0.088])


def test_not_healed_cell_says_when_it_healed_briefly() -> None:
    data = fixture_json("no-fault-and-flaps")
    for t in data["trials"]:
        if t["experiment"] == "service-port-change" and t["approach"] == "operator":
            t.update(status="not-healed", timeToHealSeconds=None)
    cell = summarize(RunResults.from_json(data)).cell("service-port-change", "operator")
    assert cell is not None
    assert cell_text(cell) == "NOT healed within 5 s (2/2 healed briefly, never settled)"


def test_disagreements_are_listed_in_run_order() -> None:
    s = summarize(load_results(fixture("no-fault-and-flaps")))
    assert [t.label for t in s.chaos_disagreements] == [
        "env-add/operator trial 2",
        "annotation-add/helm trial 2",
    ]
    assert [t.label for t in s.cross_check_disagreements] == ["service-port-change/helm trial 1"]
    assert len(s.no_fault_trials) == 5


def test_v1_runs_summarize_as_before() -> None:
    s = summarize(load_results(fixture("recorded-helm")))
    assert s.verdicts["helm"].no_fault == 0
    assert s.chaos_disagreements == []
    assert all(c.first_heal_times is None for c in s.cells.values())
