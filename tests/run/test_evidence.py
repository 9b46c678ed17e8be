"""Judging a trial's readings: the fault's own rule, a fault that was seen, a heal that settles."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from compare.judge import problems
from compare.run.evidence import Observation, TrialJudge, build_evidence, measure, recreated
from tests.run.builders import DESIRED, deployment, pod, reading, replicaset, service

T0 = 1000.0  # the injection instant (the action's end)
START = T0 - 0.01  # the injection action's start
WINDOW = 5.0
SETTLE = 1.0


def _measure(judge: TrialJudge, obs: list[Observation], **kw: Any) -> Any:
    until = kw.pop("observed_until", (obs[-1].at if obs else T0) + 2 * SETTLE)
    return measure(
        judge,
        obs,
        injection_started=START,
        injected_at=T0,
        window=WINDOW,
        settle=SETTLE,
        observed_until=until,
        **kw,
    )


def _obs(judge: TrialJudge, *readings: tuple[float, dict[str, Any]]) -> list[Observation]:
    return [judge.observe(reading(at, **kw), at, "MODIFIED") for at, kw in readings]


def test_the_healthy_state_has_no_problem() -> None:
    assert problems(DESIRED, reading()) == []


def test_stale_deployment_status_is_not_readiness() -> None:
    # Status still says 3 Ready right after a deletion; the pods say 2.
    r = reading(pods=[pod("p1"), pod("p2"), pod("p3", terminating=True)])
    assert problems(DESIRED, r) == ["pods.ready: want 3, got 2"]


def test_pods_of_an_older_template_block_the_verdict() -> None:
    r = reading(
        dep=deployment(revision=2),
        rs=[replicaset("rs-1"), replicaset("rs-2", revision=2)],
        pods=[pod("n1", "rs-2"), pod("n2", "rs-2"), pod("n3", "rs-2"), pod("p1", "rs-1")],
    )
    assert problems(DESIRED, r) == ["pods.stale: 1 pod(s) of another ReplicaSet still running"]


def test_pods_the_selector_does_not_match_are_not_the_apps() -> None:
    stranger = pod("x", "rs-9", labels={"app": "other"})
    assert problems(DESIRED, reading(pods=[pod("p1"), pod("p2"), pod("p3"), stranger])) == []


def test_the_replicaset_of_another_template_is_not_the_current_one() -> None:
    # The new template's ReplicaSet has not reached this reading yet: the old one, with three
    # Ready pods, must not pass for it (the Deployment already asks for shop:v2).
    r = reading(dep=deployment(image="shop:v2", generation=2, observed=2))
    assert "pods.ready: want 3, got 0" in problems(DESIRED, r)


def test_a_spec_the_controller_has_not_seen_is_not_healed() -> None:
    r = reading(dep=deployment(generation=3, observed=2))
    assert problems(DESIRED, r) == ["deployment.status.observedGeneration: want 3, got 2"]


def test_pod_deletion_heals_only_with_a_replacement_pod() -> None:
    judge = TrialJudge(DESIRED, "pod", "pods.ready", reading(T0 - 1))
    same_three = judge.observe(reading(T0 + 0.1), T0 + 0.1)
    assert not same_three.holds and not same_three.fault
    assert "no replacement" in same_three.problems[0]
    replaced = judge.observe(reading(T0 + 0.2, pods=[pod("p1"), pod("p2"), pod("new")]), T0 + 0.2)
    assert replaced.holds and replaced.fault == ("pods: replaced by new pods",)


NEW: dict[str, dict[str, Any]] = {
    "deployment": {
        "dep": deployment("dep-2"),
        "rs": [replicaset("rs-2", "dep-2")],
        "pods": [pod("a", "rs-2"), pod("b", "rs-2"), pod("c", "rs-2")],
    },
    "service": {"svc": service("svc-2")},
    "replicaset": {
        "rs": [replicaset("rs-2")],
        "pods": [pod("a", "rs-2"), pod("b", "rs-2"), pod("c", "rs-2")],
    },
}


@pytest.mark.parametrize("kind", ["deployment", "service", "replicaset"])
def test_deleted_object_heals_only_with_a_new_uid(kind: str) -> None:
    judge = TrialJudge(DESIRED, kind, None, reading(T0 - 1))
    assert judge.before == "present"
    old = judge.observe(reading(T0 + 0.1), T0 + 0.1)
    assert not old.holds and not old.fault  # the old object: nothing happened yet
    assert "new uid" in old.problems[-1]
    new = judge.observe(reading(T0 + 0.2, **NEW[kind]), T0 + 0.2)
    assert new.holds and "new object" in new.fault[0]


def test_absent_object_is_reported_missing() -> None:
    judge = TrialJudge(DESIRED, "service", None, reading(T0 - 1))
    obs = judge.observe(reading(T0 + 0.1, missing=("service",)), T0 + 0.1)
    assert obs.value == "absent"
    assert obs.problems == ("service: missing",)


def test_drifted_field_heals_when_back_to_its_value() -> None:
    field = "deployment.spec.template.spec.containers[webapp].image"
    judge = TrialJudge(DESIRED, "deployment", field, reading(T0 - 1))
    assert judge.before == "shop:v1"
    drifted = judge.observe(reading(T0 + 0.1, dep=deployment(image="shop:chaos")), T0 + 0.1)
    assert drifted.value == "shop:chaos" and not drifted.holds
    assert judge.observe(reading(T0 + 0.3), T0 + 0.3).holds


def test_a_heal_is_timed_at_the_start_of_the_settled_stretch() -> None:
    judge = TrialJudge(DESIRED, "service", "service.spec.ports[http].port", reading(T0 - 1))
    obs = _obs(
        judge,
        (T0 - 0.5, {}),  # before the injection: healthy, must not count
        (T0 + 0.05, {"svc": service(port=9999)}),
        (T0 + 0.15, {}),
        (T0 + 0.40, {}),
    )
    m = _measure(judge, obs)
    assert m.status == "healed"
    assert m.time_to_heal == pytest.approx(0.15)
    assert m.time_to_first_heal == pytest.approx(0.15)
    assert m.seen is not None and m.seen.how == "event"
    assert m.during == 9999 and m.final.value == 8080


def test_an_injection_that_changed_nothing_is_no_fault() -> None:
    judge = TrialJudge(DESIRED, "deployment", "deployment.spec.replicas", reading(T0 - 1))
    obs = _obs(judge, (T0 + 0.05, {}), (T0 + 3, {}))
    m = _measure(judge, obs)
    assert (m.status, m.time_to_heal, m.seen) == ("no-fault", None, None)


def test_a_reported_change_of_an_allowed_field_is_no_fault() -> None:
    field = "deployment.metadata.annotations[note]"
    judge = TrialJudge(DESIRED, "deployment", field, reading(T0 - 1))
    obs = _obs(judge, (T0 + 0.05, {}))
    m = _measure(judge, obs, reported={"value": "x", "at": T0})
    assert m.status == "no-fault"


def test_a_reported_change_counts_as_seen_when_no_reading_showed_it() -> None:
    # The operator reverted the drift before any reading saw it: the action's report remains.
    judge = TrialJudge(DESIRED, "deployment", "deployment.spec.replicas", reading(T0 - 1))
    obs = _obs(judge, (T0 + 0.05, {}))
    m = _measure(judge, obs, reported={"value": 0, "at": T0})
    assert (m.status, m.during) == ("healed", 0)
    assert m.seen is not None and m.seen.how == "injection-output"


def test_a_flap_is_recorded_and_the_clock_restarts() -> None:
    judge = TrialJudge(DESIRED, "deployment", "deployment.spec.replicas", reading(T0 - 1))
    zero = {"dep": deployment(replicas=0), "pods": []}
    obs = _obs(
        judge,
        (T0 + 0.1, zero),
        (T0 + 0.3, {}),  # healed...
        (T0 + 0.6, zero),  # ...and drifted again inside the settle period: a flap
        (T0 + 0.9, {}),
    )
    m = _measure(judge, obs, observed_until=T0 + 2.5)
    assert m.status == "healed"
    assert m.time_to_first_heal == pytest.approx(0.3)
    assert m.time_to_heal == pytest.approx(0.9)
    assert [(f.healed_at - T0, f.drifted_at - T0) for f in m.flaps] == [pytest.approx((0.3, 0.6))]


def test_readings_recorded_out_of_time_order_are_judged_in_time_order() -> None:
    # A full re-read is stamped when it ended but recorded after an event that came in
    # meanwhile: the drift it shows is before the heal, not a flap after it.
    judge = TrialJudge(DESIRED, "deployment", "deployment.spec.replicas", reading(T0 - 1))
    zero = {"dep": deployment(replicas=0), "pods": []}
    obs = _obs(judge, (T0 + 0.1, zero), (T0 + 0.5, {}), (T0 + 0.4, zero))
    m = _measure(judge, obs, observed_until=T0 + 2.5)
    assert m.status == "healed" and m.flaps == ()
    assert m.time_to_heal == pytest.approx(0.5)


def test_a_heal_that_never_settles_is_not_healed() -> None:
    judge = TrialJudge(DESIRED, "deployment", "deployment.spec.replicas", reading(T0 - 1))
    zero = {"dep": deployment(replicas=0), "pods": []}
    flapping = [(T0 + 0.1 + 0.4 * i, zero if i % 2 == 0 else {}) for i in range(14)]
    m = _measure(judge, _obs(judge, *flapping), observed_until=T0 + WINDOW + SETTLE)
    assert m.status == "not-healed"
    assert m.time_to_first_heal == pytest.approx(0.5)
    assert len(m.flaps) >= 5


def test_a_heal_not_yet_held_for_the_settle_period_is_not_settled() -> None:
    judge = TrialJudge(DESIRED, "deployment", "deployment.spec.replicas", reading(T0 - 1))
    obs = _obs(judge, (T0 + 0.1, {"dep": deployment(replicas=0), "pods": []}), (T0 + 4.8, {}))
    m = _measure(judge, obs, observed_until=T0 + 5.0)  # held only 0.2 s when observing ended
    assert m.status == "not-healed" and m.time_to_first_heal == pytest.approx(4.8)


def test_not_healed_within_the_window() -> None:
    judge = TrialJudge(DESIRED, "deployment", "deployment.spec.replicas", reading(T0 - 1))
    zero = {"dep": deployment(replicas=0), "pods": []}
    m = _measure(judge, _obs(judge, (T0 + 0.1, zero)), observed_until=T0 + WINDOW)
    assert m.status == "not-healed" and m.time_to_heal is None
    assert m.during == 0 and m.final.value == 0
    assert "deployment.spec.replicas: want 3, got 0" in m.final.problems


def test_healed_after_the_window_is_not_healed() -> None:
    judge = TrialJudge(DESIRED, "service", None, reading(T0 - 1))
    obs = _obs(judge, (T0 + 1, {"missing": ("service",)}), (T0 + 6, {"svc": service("svc-2")}))
    assert _measure(judge, obs).status == "not-healed"


def test_during_of_pod_deletion_is_the_fewest_ready_pods() -> None:
    judge = TrialJudge(DESIRED, "pod", "pods.ready", reading(T0 - 1))
    obs = _obs(
        judge,
        (T0 + 0.05, {"pods": [pod("p1"), pod("p2", terminating=True)]}),
        (T0 + 0.10, {"pods": [pod("p1"), pod("n1", ready=False)]}),
        (T0 + 0.15, {"pods": [pod("p1"), pod("n1"), pod("n2")]}),
    )
    m = _measure(judge, obs)
    assert (m.status, m.during, m.final.value) == ("healed", 1, 3)


def test_recreated_lists_kinds_with_a_new_uid() -> None:
    before = {"deployment": "d1", "service": "s1", "replicaset": "r1", "pods": ["a", "b"]}
    after = {"deployment": "d2", "service": "s1", "replicaset": "r2", "pods": ["a", "c"]}
    assert recreated(before, after) == ["deployment", "replicaset", "pod"]
    gone: dict[str, object] = {"deployment": None, "service": "s1", "replicaset": None, "pods": []}
    assert recreated(before, gone) == []


def test_evidence_carries_uids_the_sighting_and_the_end_state() -> None:
    judge = TrialJudge(DESIRED, "service", None, reading(T0 - 1))
    obs = _obs(judge, (T0 + 0.1, {"missing": ("service",)}), (T0 + 0.2, {"svc": service("s2")}))
    m = _measure(judge, obs)
    ev = build_evidence(
        judge, m, injected_at=T0, settle=SETTLE, chaos_verdict="completed", chaos_agrees=True
    ).model_dump(mode="json", by_alias=True)
    assert ev["before"] == "present" and ev["during"] == "absent" and ev["after"] == "present"
    assert ev["uidsBefore"]["service"] == "svc-1" and ev["uidsAfter"]["service"] == "s2"
    assert ev["recreated"] == ["service"]
    assert ev["readyPods"] == 3 and ev["desiredReplicas"] == 3
    assert ev["mismatchesAtEnd"] == []
    assert ev["faultSeen"] == {"how": "event", "atSeconds": 0.1, "detail": "service: missing"}
    assert ev["settleSeconds"] == SETTLE and ev["chaosAgrees"] is True


def test_a_field_of_the_first_of_two_deployments_is_judged_as_the_judge_names_it() -> None:
    # An app with two Deployments names them `deployment/<name>`; the faults' paths say
    # `deployment` (the first, as the trial's view does). An annotation nobody owns on it is
    # no judged change, its replicas are.
    from compare.judge import as_given
    from compare.run.evidence import _judges
    from tests.run.builders import DEPLOYMENT, SERVICE

    other = copy.deepcopy(DEPLOYMENT)
    other["metadata"]["name"] = "shop-webhook"
    desired = as_given([DEPLOYMENT, other, SERVICE])
    assert {item.root for item in desired.items} >= {"deployment/shop", "deployment/shop-webhook"}
    assert not _judges(desired, "deployment.metadata.annotations[chaos.example.com/note]")
    assert _judges(desired, "deployment.spec.replicas")


def test_a_heal_the_injection_undoes_before_it_ends_never_settled() -> None:
    # The injection deletes the Service and creates its own copy; the controller re-creates
    # the Service in between, and on a loaded machine the injection's retry comes more than a
    # settle period later. The controller's Service held, but the injection had not ended:
    # its copy, seen just after the injection's end, is the state the trial ends in.
    judge = TrialJudge(DESIRED, "service", None, reading(T0 - 5))
    headless = service("svc-copy")
    headless["spec"]["clusterIP"] = "None"
    obs = _obs(
        judge,
        (T0 - 1.9, {"missing": ("service",)}),
        (T0 - 1.8, {"svc": service("svc-controller")}),
        (T0 + 0.005, {"svc": headless}),
    )
    m = measure(
        judge,
        obs,
        injection_started=T0 - 2.0,  # the injection ran for 2 s (its retries)
        injected_at=T0,
        window=WINDOW,
        settle=SETTLE,
        observed_until=T0 + WINDOW + SETTLE,
    )
    assert m.status == "not-healed", m
    assert len(m.flaps) == 1  # the controller's Service, undone by the injection itself


def test_a_heal_before_the_injection_returned_counts_from_its_start() -> None:
    # The controller re-created the Service while the injection was still running: healed in
    # 0 s, once it also held for the settle period after the injection's end.
    judge = TrialJudge(DESIRED, "service", None, reading(T0 - 5))
    obs = _obs(judge, (T0 - 1.9, {"missing": ("service",)}), (T0 - 1.8, {"svc": service("svc-2")}))

    def until(observed_until: float) -> Any:
        return measure(
            judge,
            obs,
            injection_started=T0 - 2.0,
            injected_at=T0,
            window=WINDOW,
            settle=SETTLE,
            observed_until=observed_until,
        )

    m = until(T0 + SETTLE + 0.1)
    assert m.status == "healed" and m.time_to_heal == 0.0
    # Held 2.3 s since its start, but only 0.5 s since the injection's end: not settled yet.
    assert until(T0 + 0.5).status == "not-healed"


def _written(obj: dict[str, Any], manager: str, time: str) -> dict[str, Any]:
    obj["metadata"]["managedFields"] = [{"manager": manager, "operation": "Update", "time": time}]
    return obj


def test_a_heal_names_who_wrote_it() -> None:
    field = "deployment.spec.template.spec.containers[webapp].image"
    base = _written(deployment(), "webapp-operator", "2026-01-01T00:00:00Z")
    judge = TrialJudge(DESIRED, "deployment", field, reading(T0 - 1, dep=base))
    drifted = _written(deployment(image="x"), "webapp-operator", "2026-01-01T00:00:00Z")
    healed = _written(deployment(), "webapp-operator", "2026-01-01T00:00:07Z")
    obs = _obs(judge, (T0 + 0.1, {"dep": drifted}), (T0 + 0.3, {"dep": healed}))
    result = _measure(judge, obs)
    assert result.status == "healed" and result.healed_by == ("webapp-operator",)
    evidence = build_evidence(judge, result, injected_at=T0, settle=SETTLE)
    assert evidence.healed_by == ["webapp-operator"]


def test_replacement_pods_are_kubernetes_own_heal() -> None:
    judge = TrialJudge(DESIRED, "pod", "pods.ready", reading(T0 - 1))
    new = _written(pod("new"), "kube-controller-manager", "2026-01-01T00:00:03Z")
    obs = _obs(
        judge,
        (T0 + 0.1, {"pods": [pod("p1"), pod("p2")]}),
        (T0 + 0.2, {"pods": [pod("p1"), pod("p2"), new]}),
    )
    result = _measure(judge, obs)
    assert result.status == "healed" and result.healed_by == ("kube-controller-manager",)


def test_no_heal_names_no_one() -> None:
    field = "deployment.spec.template.spec.containers[webapp].image"
    judge = TrialJudge(DESIRED, "deployment", field, reading(T0 - 1))
    obs = _obs(judge, (T0 + 0.1, {"dep": deployment(image="x")}))
    assert _measure(judge, obs).healed_by == ()
