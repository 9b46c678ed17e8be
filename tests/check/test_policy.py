"""The policy schema and what each expectation means, judged on recorded runs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from compare.check import DEFAULT_POLICY, evaluate, load_policy, parse_policy
from compare.errors import CompareError
from compare.results import RunResults, load_results, summarize
from tests.results.helpers import POLICY, fixture, fixture_json


def _policy(*rules: dict[str, Any], require_complete: bool = True) -> Any:
    return parse_policy(
        {"version": 1, "requireComplete": require_complete, "expectations": list(rules)}
    )


def _violations(policy: Any, run: str | RunResults) -> list[str]:
    results = load_results(fixture(run)) if isinstance(run, str) else run
    return evaluate(policy, summarize(results)).violations


def test_the_catalogue_policy_holds_on_the_full_run() -> None:
    policy = load_policy(POLICY)
    result = evaluate(policy, summarize(load_results(fixture("full-run"))))
    assert result.holds, result.violations
    # 12 operator faults + operator-down-drift + 3 helm heals + 9 helm does-not-heal.
    assert len(result.verdicts) == 25
    assert result.notes == []


def test_heals_within_max_and_p95() -> None:
    # with-errors: operator pod-delete-one took 0.4x, 0.4x and 7.84 s.
    rule = {"approach": "operator", "faults": ["pod-delete-one"], "expect": "heals"}
    assert _violations(_policy({**rule, "within": 8}), "with-errors") == []
    broken = _violations(_policy({**rule, "within": 5}), "with-errors")
    assert broken == [
        "operator/pod-delete-one: expected to heal within 5 s (max):"
        " max time-to-heal 7.84 s exceeds 5 s"
    ]
    assert _violations(_policy({**rule, "within": 5, "statistic": "p50"}), "with-errors") == []
    p95 = _violations(_policy({**rule, "within": 5, "statistic": "p95"}), "with-errors")
    assert len(p95) == 1
    assert "p95 time-to-heal 7.10 s exceeds 5 s" in p95[0]


def test_error_trial_breaks_heals_and_says_so() -> None:
    rule = {"approach": "operator", "faults": ["image-change"], "expect": "heals"}
    (line,) = _violations(_policy(rule), "with-errors")
    assert (
        "1/3 trials ended in error (an error counts as not healed; trial 2: inject failed" in line
    )


def test_not_healed_trial_breaks_heals() -> None:
    rule = {"approach": "operator", "faults": ["service-selector-change"], "expect": "heals"}
    (line,) = _violations(_policy(rule), "with-errors")
    assert line.endswith("1/3 trials NOT healed within the 8 s window")


def test_does_not_heal() -> None:
    rule = {"approach": "helm", "faults": ["image-change"], "expect": "does-not-heal"}
    assert _violations(_policy(rule), "full-run") == []
    healed = {"approach": "helm", "faults": ["pod-delete-one"], "expect": "does-not-heal"}
    (line,) = _violations(_policy(healed), "full-run")
    assert line.startswith("helm/pod-delete-one: expected not to heal: healed in 3/3 trials")
    errored = {"approach": "helm", "faults": ["deployment-delete"], "expect": "does-not-heal"}
    (line,) = _violations(_policy(errored), "with-errors")
    assert "an error proves nothing either way" in line


def test_all_with_except_covers_the_run_faults_of_the_approach() -> None:
    rule = {
        "approach": "operator",
        "faults": "all",
        "except": ["operator-down-drift"],
        "expect": "heals",
    }
    result = evaluate(_policy(rule), summarize(load_results(fixture("full-run"))))
    assert len(result.verdicts) == 12
    assert "operator-down-drift" not in {v.fault for v in result.verdicts}
    helm_all = {"approach": "helm", "faults": "all", "expect": "heals"}
    result = evaluate(_policy(helm_all), summarize(load_results(fixture("full-run"))))
    # operator-down-drift does not apply to helm, so `all` leaves it out.
    assert len(result.verdicts) == 12
    assert len(result.violations) == 9


def test_kinds_narrow_all_to_the_faults_acting_on_those_objects() -> None:
    # In full-run the helm faults act on pods, Deployments, Services and ReplicaSets.
    summary = summarize(load_results(fixture("full-run")))
    by_kind: dict[str | None, set[str]] = {}
    for (fault, approach), cell in summary.cells.items():
        if approach == "helm" and cell.trials:
            by_kind.setdefault(cell.kind, set()).add(fault)
    assert {"pod", "deployment", "service"} <= set(by_kind)
    rule = {"approach": "helm", "faults": "all", "kinds": ["Service"], "expect": "heals"}
    result = evaluate(_policy(rule), summary)
    assert {v.fault for v in result.verdicts} == by_kind["service"]
    # Matched without regard to case; several kinds add up.
    two = {**rule, "kinds": ["Service", "Pod"]}
    result = evaluate(_policy(two), summary)
    assert {v.fault for v in result.verdicts} == by_kind["service"] | by_kind["pod"]
    # A kind no fault of the run acts on covers nothing: no verdict, every cell a note.
    none = {**rule, "kinds": ["ConfigMap"]}
    result = evaluate(_policy(none), summary)
    assert result.verdicts == [] and result.holds
    assert "not covered by the policy" in result.notes[0]


def test_kinds_rules_of_different_kinds_may_demand_different_outcomes() -> None:
    summary = summarize(load_results(fixture("full-run")))
    pods = {"approach": "helm", "faults": "all", "kinds": ["Pod"], "expect": "heals"}
    services = {**pods, "kinds": ["Service"], "expect": "does-not-heal"}
    result = evaluate(_policy(pods, services), summary)
    assert not any("contradict" in line for line in result.violations)
    # Which kind a listed fault acts on is known from the run: a clash is a run problem there.
    listed = {"approach": "helm", "faults": ["service-delete"], "expect": "heals"}
    result = evaluate(_policy(listed, services), summary)
    assert any(
        "contradict each other on helm/service-delete (heals and does-not-heal)" in problem
        for problem in result.run_problems
    ), result.run_problems


def test_missing_fault_and_approach_are_violations_unless_optional() -> None:
    rule = {"approach": "helm", "faults": ["pod-delete-all"], "expect": "heals"}
    (line,) = _violations(_policy(rule), "single-trial")
    assert line == (
        "helm/pod-delete-all: expected to heal: fault 'pod-delete-all' is not in this run,"
        " and the expectation is not optional"
    )
    assert _violations(_policy({**rule, "optional": True}), "single-trial") == []
    # An approach the toolkit does not know is a bad policy (exit 2), not a violation.
    other = {"approach": "kustomize", "faults": ["pod-delete-one"], "expect": "heals"}
    with pytest.raises(
        CompareError, match=r"expectations\[0\]\.approach: unknown approach .kustomize."
    ):
        _policy(other)


def test_incomplete_run() -> None:
    rule = {"approach": "helm", "faults": ["pod-delete-one"], "expect": "heals"}
    lines = _violations(_policy(rule), "interrupted")
    assert len(lines) == 1
    assert lines[0].startswith("run 20261204T093000Z-e5f6 is incomplete (complete=false")
    assert "17 of 50 planned trials recorded" in lines[0]
    assert _violations(_policy(rule, require_complete=False), "interrupted") == []
    never = {"approach": "helm", "faults": ["service-delete"], "expect": "does-not-heal"}
    (line,) = _violations(_policy(never, require_complete=False), "interrupted")
    assert "no trial was recorded (the run was cut short)" in line


def test_uncovered_error_cells_are_noted_not_judged() -> None:
    rule = {"approach": "operator", "faults": "all", "expect": "heals", "optional": True}
    data = fixture_json("with-errors")
    result = evaluate(_policy(rule), summarize(RunResults.from_json(data)))
    assert any("helm/deployment-delete: 3/3 trials ended in error" in n for n in result.notes)
    assert all(v.approach == "operator" for v in result.verdicts)


# --- expect: no-fault, and no-fault trials under heals / does-not-heal ------------------------


def test_expect_no_fault_holds_when_the_injection_changed_nothing() -> None:
    rule = {"approach": "operator", "faults": ["annotation-add"], "expect": "no-fault"}
    result = evaluate(_policy(rule), summarize(load_results(fixture("no-fault-and-flaps"))))
    assert result.holds, result.violations
    (verdict,) = result.verdicts
    assert verdict.line == (
        "operator/annotation-add: expected no fault (the injection changes nothing the judge"
        " checks): holds"
    )


def test_expect_no_fault_breaks_when_the_fault_was_seen() -> None:
    rule = {"approach": "operator", "faults": ["image-change", "env-add"], "expect": "no-fault"}
    lines = _violations(_policy(rule), "no-fault-and-flaps")
    assert lines == [
        "operator/image-change: expected no fault (the injection changes nothing the judge"
        " checks): the fault was seen in 2/2 trials (2 healed, 0 NOT healed): the injection"
        " changed something the judge checks",
        "operator/env-add: expected no fault (the injection changes nothing the judge checks):"
        " the fault was seen in 2/2 trials (2 healed, 0 NOT healed): the injection changed"
        " something the judge checks",
    ]
    helm = {"approach": "helm", "faults": ["env-add"], "expect": "no-fault"}
    (line,) = _violations(_policy(helm), "no-fault-and-flaps")
    assert line.endswith(
        "the fault was seen in 1/2 trials (0 healed, 1 NOT healed): the"
        " injection changed something the judge checks"
    )


def test_expect_no_fault_with_an_error_trial() -> None:
    data = fixture_json("no-fault-and-flaps")
    trial = next(
        t for t in data["trials"] if (t["experiment"], t["approach"]) == ("annotation-add", "helm")
    )
    trial.update(status="error", error="inject failed: 403 Forbidden")
    rule = {"approach": "helm", "faults": ["annotation-add"], "expect": "no-fault"}
    (line,) = _violations(_policy(rule), RunResults.from_json(data))
    assert "1/2 trials ended in error (an error proves nothing either way; trial 1: inject" in line


@pytest.mark.parametrize("expect", ["heals", "does-not-heal"])
def test_a_no_fault_trial_breaks_heals_and_does_not_heal(expect: str) -> None:
    rule = {"approach": "helm", "faults": ["annotation-add"], "expect": expect}
    (line,) = _violations(_policy(rule), "no-fault-and-flaps")
    wording = "to heal" if expect == "heals" else "not to heal"
    assert line == (
        f"helm/annotation-add: expected {wording}:"
        " annotation-add/helm trial 1: the injection changed nothing (no-fault), so the fault"
        " was not exercised;"
        " annotation-add/helm trial 2: the injection changed nothing (no-fault), so the fault"
        " was not exercised"
    )


def test_one_no_fault_trial_among_not_healed_breaks_does_not_heal() -> None:
    rule = {"approach": "helm", "faults": ["env-add"], "expect": "does-not-heal"}
    (line,) = _violations(_policy(rule), "no-fault-and-flaps")
    assert line == (
        "helm/env-add: expected not to heal: env-add/helm trial 2: the injection changed nothing"
        " (no-fault), so the fault was not exercised"
    )
    # The trial that did see the fault and stayed broken is fine for does-not-heal.
    fine = {"approach": "helm", "faults": ["image-change"], "expect": "does-not-heal"}
    assert _violations(_policy(fine), "no-fault-and-flaps") == []


def test_settled_heal_is_what_heals_judges() -> None:
    # image-change/operator trial 1 first healed at 0.118 s, flapped, settled at 0.552 s.
    rule = {"approach": "operator", "faults": ["image-change"], "expect": "heals"}
    assert _violations(_policy({**rule, "within": 0.6}), "no-fault-and-flaps") == []
    (line,) = _violations(_policy({**rule, "within": 0.5}), "no-fault-and-flaps")
    assert line.endswith("max time-to-heal 0.55 s exceeds 0.5 s")
    # A trial that healed only briefly (never settled) is NOT healed.
    port = {"approach": "operator", "faults": ["service-port-change"], "expect": "heals"}
    (line,) = _violations(_policy(port), "no-fault-and-flaps")
    assert line.endswith("1/2 trials NOT healed within the 5 s window")


def test_uncovered_no_fault_cells_are_noted() -> None:
    rule = {"approach": "operator", "faults": ["pod-delete-one"], "expect": "heals"}
    result = evaluate(_policy(rule), summarize(load_results(fixture("no-fault-and-flaps"))))
    assert result.holds
    assert (
        "helm/annotation-add: 2/2 trials saw no fault (the injection changed nothing) outside any"
        " expectation"
    ) in result.notes
    assert any(n.startswith("helm/env-add: 1/2 trials saw no fault") for n in result.notes)


def test_no_fault_rules_are_checked_for_contradictions_and_within() -> None:
    heals = {"approach": "helm", "faults": "all", "expect": "heals"}
    no_fault = {"approach": "helm", "faults": ["annotation-add"], "expect": "no-fault"}
    with pytest.raises(CompareError, match=r"helm: annotation-add both heals and no-fault"):
        _policy(heals, no_fault)
    with pytest.raises(CompareError, match=r"`within` only applies to `expect: heals`"):
        _policy({**no_fault, "within": 2})
    other = {"approach": "operator", "faults": "all", "expect": "heals"}
    assert _policy(other, no_fault).expectations[1].expect == "no-fault"


def test_default_policy_loads() -> None:
    policy = load_policy(DEFAULT_POLICY)
    assert all(e.expect in ("heals", "does-not-heal", "no-fault") for e in policy.expectations)


BAD: list[tuple[str, Any, str]] = [
    ("not-mapping", ["x"], "expected a mapping with version and expectations"),
    ("no-version", {"expectations": []}, "version: required field is missing"),
    ("new-version", {"version": 2, "expectations": []}, "version 2 is not supported"),
    ("no-rules", {"version": 1, "expectations": []}, "expectations: List should have at least 1"),
    (
        "bad-expect",
        {"version": 1, "expectations": [{"approach": "helm", "faults": "all", "expect": "heal"}]},
        "expectations[0].expect: Input should be 'heals', 'does-not-heal' or 'no-fault'",
    ),
    (
        "lone-fault",
        {
            "version": 1,
            "expectations": [{"approach": "helm", "faults": "pod-delete-one", "expect": "heals"}],
        },
        "expectations[0].faults: must be `all` or a list of fault names (got 'pod-delete-one')",
    ),
    (
        "unknown-key",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": "all", "expect": "heals", "whithin": 3}
            ],
        },
        "expectations[0].whithin: unknown field",
    ),
    (
        "within-on-does-not-heal",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": "all", "expect": "does-not-heal", "within": 3}
            ],
        },
        "expectations[0]: `within` only applies to `expect: heals`",
    ),
    (
        "negative-within",
        {
            "version": 1,
            "expectations": [{"approach": "helm", "faults": "all", "expect": "heals", "within": 0}],
        },
        "expectations[0].within: Input should be greater than 0",
    ),
    (
        "except-with-list",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": ["a"], "except": ["a"], "expect": "heals"}
            ],
        },
        "`except` only applies to `faults: all`",
    ),
    (
        "contradiction",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": "all", "except": ["x"], "expect": "heals"},
                {"approach": "helm", "faults": ["x", "image-change"], "expect": "does-not-heal"},
            ],
        },
        "expectations[0] and expectations[1] contradict each other (helm: image-change",
    ),
    (
        "kinds-with-list",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": ["a"], "kinds": ["Pod"], "expect": "heals"}
            ],
        },
        "expectations[0]: `kinds` only applies to `faults: all`",
    ),
    (
        "unknown-kind",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": "all", "kinds": ["Deploymnet"], "expect": "heals"}
            ],
        },
        "expectations[0].kinds: unknown kind 'Deploymnet' (known: ClusterRole",
    ),
    (
        "kinds-contradiction",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": "all", "kinds": ["Pod"], "expect": "heals"},
                {
                    "approach": "helm",
                    "faults": "all",
                    "kinds": ["Pod", "Service"],
                    "expect": "does-not-heal",
                },
            ],
        },
        "expectations[0] and expectations[1] contradict each other (helm: faults on pod objects",
    ),
    (
        "statistic",
        {
            "version": 1,
            "expectations": [
                {"approach": "helm", "faults": "all", "expect": "heals", "statistic": "p99"}
            ],
        },
        "expectations[0].statistic: Input should be 'p50', 'p95' or 'max'",
    ),
]


@pytest.mark.parametrize(("case", "data", "message"), BAD, ids=[b[0] for b in BAD])
def test_malformed_policies(case: str, data: Any, message: str) -> None:
    with pytest.raises(CompareError) as caught:
        parse_policy(data, source="p.yaml")
    assert str(caught.value).startswith("p.yaml: ")
    assert message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_yaml_problems_name_the_file_and_line(tmp_path: Path) -> None:
    bad = tmp_path / "policy.yaml"
    bad.write_text("version: 1\nexpectations:\n  - approach: [helm\n")
    with pytest.raises(CompareError, match=r"policy\.yaml: not valid YAML at line \d+, column"):
        load_policy(bad)
    with pytest.raises(CompareError, match=r"policy file .*absent\.yaml: not found"):
        load_policy(tmp_path / "absent.yaml")
    # YAML 1.1 reads `on:` as the boolean true; the message says where instead of 'True'.
    bad.write_text(
        "version: 1\nexpectations:\n  - {approach: helm, faults: all, expect: heals, on: p95}\n"
    )
    with pytest.raises(CompareError, match=r"expectations\[0\]\.True: keys must be strings"):
        load_policy(bad)


def test_default_policy_file_is_valid_yaml_with_every_builtin_fault() -> None:
    data = yaml.safe_load(DEFAULT_POLICY.read_text())
    named = {
        f
        for rule in data["expectations"]
        if isinstance(rule["faults"], list)
        for f in rule["faults"]
    }
    results = load_results(fixture("full-run"))
    helm_faults = {e.name for e in results.experiments if "helm" in e.approaches}
    assert helm_faults <= named  # every helm fault has an explicit expectation


def test_missing_approach_under_all_is_one_violation() -> None:
    rule = {"approach": "operator", "faults": "all", "expect": "heals"}
    data = fixture_json("full-run")
    data["settings"]["approaches"] = ["helm"]
    data["trials"] = [t for t in data["trials"] if t["approach"] == "helm"]
    assert _violations(_policy(rule), RunResults.from_json(data)) == [
        "operator/all: expected to heal: approach 'operator' is not in this run,"
        " and the expectation is not optional"
    ]


def test_the_example_target_policy_loads_and_names_kinds_not_faults() -> None:
    from compare.paths import EXAMPLES_DIR

    policy = load_policy(EXAMPLES_DIR / "target-policy.yaml")
    assert all(rule.kinds or rule.faults != "all" for rule in policy.expectations)
    assert {rule.approach for rule in policy.expectations} == {"helm", "operator"}
