"""Judging readings: the healing rule of each kind of fault, times and resolution."""

from __future__ import annotations

import pytest

from compare.chaos.state import Snapshot, problems
from compare.run.evidence import Judge, build_evidence, measure, recreated
from tests.run.builders import DESIRED, deployment, pod, replicaset, service, snapshot

T0 = 1000.0  # the injection instant
WINDOW = 5.0


def test_the_healthy_state_has_no_problem() -> None:
    assert problems(snapshot(T0), DESIRED) == []


def test_stale_deployment_status_is_not_readiness() -> None:
    # Status still says 3 Ready right after a deletion; the pods say 2.
    snap = snapshot(T0, pods=[pod("p1"), pod("p2"), pod("p3", terminating=True)])
    assert problems(snap, DESIRED) == ["pods.ready: want 3, got 2"]


def test_pods_of_an_older_template_block_the_verdict() -> None:
    snap = snapshot(
        T0,
        rs=replicaset("rs-2", revision=2),
        pods=[pod("n1", "rs-2"), pod("n2", "rs-2"), pod("n3", "rs-2"), pod("p1", "rs-1")],
    )
    assert problems(snap, DESIRED) == ["pods.stale: 1 pod(s) of another ReplicaSet still running"]


def test_a_spec_the_controller_has_not_seen_is_not_healed() -> None:
    snap = snapshot(T0, dep=deployment(generation=3, observed=2))
    assert problems(snap, DESIRED) == ["deployment.status.observedGeneration: want 3, got 2"]


def test_pod_deletion_heals_only_with_a_replacement_pod() -> None:
    judge = Judge(DESIRED, "pod", "pods.ready", snapshot(T0 - 1))
    same_three = judge.observe(snapshot(T0 + 0.1))
    assert not same_three.healed
    assert "no replacement" in same_three.problems[0]
    replaced = judge.observe(snapshot(T0 + 0.2, pods=[pod("p1"), pod("p2"), pod("new")]))
    assert replaced.healed


@pytest.mark.parametrize("kind", ["deployment", "service", "replicaset"])
def test_deleted_object_heals_only_with_a_new_uid(kind: str) -> None:
    judge = Judge(DESIRED, kind, None, snapshot(T0 - 1))
    assert judge.before == "present"
    old = judge.observe(snapshot(T0 + 0.1))
    assert not old.healed
    assert "new uid" in old.problems[-1]
    new = {
        "deployment": {
            "dep": deployment("dep-2"),
            "rs": replicaset("rs-2", "dep-2"),
            "pods": [pod("a", "rs-2"), pod("b", "rs-2"), pod("c", "rs-2")],
        },
        "service": {"svc": service("svc-2")},
        "replicaset": {
            "rs": replicaset("rs-2"),
            "pods": [pod("a", "rs-2"), pod("b", "rs-2"), pod("c", "rs-2")],
        },
    }[kind]
    assert judge.observe(snapshot(T0 + 0.2, **new)).healed  # type: ignore[arg-type]


def test_absent_object_is_reported_absent() -> None:
    judge = Judge(DESIRED, "service", None, snapshot(T0 - 1))
    obs = judge.observe(snapshot(T0 + 0.1, missing=("service",)))
    assert obs.value == "absent"
    assert obs.problems == ("service: want 'present', got None",)


def test_drifted_field_heals_when_back_to_its_value() -> None:
    field = "deployment.spec.template.spec.containers[webapp].image"
    judge = Judge(DESIRED, "deployment", field, snapshot(T0 - 1))
    assert judge.before == "shop:v1"
    drifted = judge.observe(snapshot(T0 + 0.1, dep=deployment(image="shop:chaos")))
    assert drifted.value == "shop:chaos"
    assert not drifted.healed
    assert judge.observe(snapshot(T0 + 0.3)).healed


def test_measure_times_the_first_healed_reading_after_the_injection() -> None:
    judge = Judge(DESIRED, "service", "service.spec.ports[http].port", snapshot(T0 - 1))
    readings = [
        snapshot(T0 - 0.02),  # before the injection: healthy, must not count
        snapshot(T0 + 0.05, svc=service(port=9999)),
        snapshot(T0 + 0.10, svc=service(port=9999)),
        snapshot(T0 + 0.15),
        snapshot(T0 + 0.20),
    ]
    m = measure(judge, [judge.observe(s) for s in readings], T0, WINDOW)
    assert m.status == "healed"
    assert m.time_to_heal == pytest.approx(0.15)
    assert m.resolution == pytest.approx(0.05)  # healed between the readings at 0.10 and 0.15
    assert m.during == 9999
    assert m.final.value == 8080


def test_a_reading_that_started_before_the_injection_does_not_count() -> None:
    judge = Judge(DESIRED, "service", "service.spec.ports[http].port", snapshot(T0 - 1))
    straddling = snapshot(T0 + 0.01, took=0.03)  # started at T0 - 0.02
    m = measure(
        judge,
        [judge.observe(straddling), judge.observe(snapshot(T0 + 0.06))],
        T0,
        WINDOW,
    )
    assert m.time_to_heal == pytest.approx(0.06)


def test_not_healed_within_the_window() -> None:
    judge = Judge(DESIRED, "deployment", "deployment.spec.replicas", snapshot(T0 - 1))
    zero = deployment(replicas=0)
    readings = [snapshot(T0 + i * 0.5, dep=zero, pods=[]) for i in range(1, 11)]
    m = measure(judge, [judge.observe(s) for s in readings], T0, WINDOW)
    assert m.status == "not-healed"
    assert m.time_to_heal is None
    assert m.during == 0 and m.final.value == 0
    assert m.resolution == pytest.approx(0.5)  # the largest gap between readings
    assert "deployment.spec.replicas: want 3, got 0" in m.final.problems


def test_healed_after_the_window_is_not_healed() -> None:
    judge = Judge(DESIRED, "service", None, snapshot(T0 - 1))
    late = [snapshot(T0 + 1, missing=("service",)), snapshot(T0 + 6, svc=service("svc-2"))]
    m = measure(judge, [judge.observe(s) for s in late], T0, WINDOW)
    assert m.status == "not-healed"


def test_during_prefers_what_the_injection_reported() -> None:
    # The operator reverted the drift before any reading saw it: the action's report remains.
    judge = Judge(DESIRED, "deployment", "deployment.spec.replicas", snapshot(T0 - 1))
    m = measure(
        judge,
        [judge.observe(snapshot(T0 + 0.05))],
        T0,
        WINDOW,
        reported=0,
        has_reported=True,
    )
    assert (m.status, m.during) == ("healed", 0)


def test_during_of_pod_deletion_is_the_fewest_ready_pods() -> None:
    judge = Judge(DESIRED, "pod", "pods.ready", snapshot(T0 - 1))
    readings = [
        snapshot(T0 + 0.05, pods=[pod("p1"), pod("p2", terminating=True)]),
        snapshot(T0 + 0.10, pods=[pod("p1"), pod("n1", ready=False)]),
        snapshot(T0 + 0.15, pods=[pod("p1"), pod("n1"), pod("n2")]),
    ]
    m = measure(judge, [judge.observe(s) for s in readings], T0, WINDOW)
    assert (m.status, m.during, m.final.value) == ("healed", 1, 3)


def test_recreated_lists_kinds_with_a_new_uid() -> None:
    before = {"deployment": "d1", "service": "s1", "replicaset": "r1", "pods": ["a", "b"]}
    after = {"deployment": "d2", "service": "s1", "replicaset": "r2", "pods": ["a", "c"]}
    assert recreated(before, after) == ["deployment", "replicaset", "pod"]
    gone: dict[str, object] = {"deployment": None, "service": "s1", "replicaset": None, "pods": []}
    assert recreated(before, gone) == []


def test_evidence_carries_uids_and_the_end_state() -> None:
    judge = Judge(DESIRED, "service", None, snapshot(T0 - 1))
    readings = [snapshot(T0 + 0.1, missing=("service",)), snapshot(T0 + 0.2, svc=service("s2"))]
    m = measure(judge, [judge.observe(s) for s in readings], T0, WINDOW)
    ev = build_evidence(judge, m, extra={"readings": 2}).model_dump(mode="json", by_alias=True)
    assert ev["before"] == "present" and ev["during"] == "absent" and ev["after"] == "present"
    assert ev["uidsBefore"]["service"] == "svc-1" and ev["uidsAfter"]["service"] == "s2"
    assert ev["recreated"] == ["service"]
    assert ev["readyPods"] == 3 and ev["desiredReplicas"] == 3
    assert ev["mismatchesAtEnd"] == [] and ev["readings"] == 2


def test_a_partial_reading_is_judged_on_the_owned_fields_alone() -> None:
    judge = Judge(DESIRED, "deployment", "deployment.spec.replicas", snapshot(T0 - 1))
    partial = Snapshot(T0, T0 + 0.01, deployment(replicas=0), service(), None, [], partial=True)
    obs = judge.observe(partial)
    assert obs.partial and obs.value == 0
    assert obs.problems == ("deployment.spec.replicas: want 3, got 0",)
