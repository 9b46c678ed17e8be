"""The judge's rules that make a verdict true where it used to look away: a pod changed in
place is drift that only its replacement heals, an allowed template change causes a rollout
that is no fault, a change hidden by a watch relist is still seen, an object being deleted is
drift healed only by a new object."""

from __future__ import annotations

import copy
from typing import Any

from compare.judge import Reading, problems
from compare.judge.watch import gap_changes
from compare.run.evidence import TrialJudge, measure
from tests.run.builders import DESIRED, deployment, pod, reading, replicaset, service

T0 = 1000.0
START = T0 - 0.01


def _measure(judge: TrialJudge, readings: list[tuple[float, Reading]]) -> Any:
    obs = [judge.observe(r, at, "MODIFIED") for at, r in readings]
    return measure(
        judge,
        obs,
        injection_started=START,
        injected_at=T0,
        window=5.0,
        settle=1.0,
        observed_until=readings[-1][0] + 2.0,
    )


def _in_place(p: dict[str, Any], image: str) -> dict[str, Any]:
    changed = copy.deepcopy(p)
    changed["spec"]["containers"][0]["image"] = image
    changed["metadata"]["resourceVersion"] = image
    return changed


def test_a_pod_changed_in_place_is_drift_only_its_replacement_heals() -> None:
    judge = TrialJudge(DESIRED, None, None, reading(T0 - 1))
    p1, p2, p3 = pod("p1"), pod("p2"), pod("p3")
    changed = reading(T0 + 0.1, pods=[_in_place(p1, "shop:chaos"), p2, p3])
    assert problems(DESIRED, changed) == [
        "pod[shop-p1].spec.containers[webapp].image: want 'shop:v1', got 'shop:chaos'"
    ]
    # Set back in place: the spec reads right again, but the pod ran the other image (its
    # container restarted); nothing but a new pod is the template's.
    back = reading(T0 + 0.2, pods=[_in_place(p1, "shop:v1"), p2, p3])
    replaced = reading(T0 + 0.3, pods=[pod("p4"), p2, p3])
    m = _measure(judge, [(T0 + 0.1, changed), (T0 + 0.2, back), (T0 + 4.0, replaced)])
    assert m.status == "healed" and m.time_to_heal == 4.0
    assert "only its replacement heals" in judge.observe(back, T0 + 0.2).problems[0]
    never = _measure(TrialJudge(DESIRED, None, None, reading(T0 - 1)), [(T0 + 0.1, changed)])
    assert never.status == "not-healed"


def test_a_pod_with_what_pod_creation_adds_holds_and_anything_else_is_drift() -> None:
    assert problems(DESIRED, reading()) == []  # node, token volume, system tolerations
    tolerant = pod("p1")
    tolerant["spec"]["tolerations"].append({"key": "team", "operator": "Exists"})
    tolerant["metadata"]["resourceVersion"] = "2"  # a pod's judgement is cached by version
    debug = pod("p2")
    debug["spec"]["ephemeralContainers"] = [{"name": "debugger", "image": "busybox"}]
    debug["metadata"]["resourceVersion"] = "2"
    found = problems(DESIRED, reading(pods=[tolerant, debug, pod("p3")]))
    assert [p.split(":")[0] for p in found] == [
        "pod[shop-p1].spec.tolerations",
        "pod[shop-p2].spec.ephemeralContainers",
    ]


def test_a_foreign_pod_the_selector_matches_is_drift() -> None:
    foreign = pod("x", "someone-else")
    found = problems(DESIRED, reading(pods=[pod("p1"), pod("p2"), pod("p3"), foreign]))
    assert found == [
        "pod[shop-x]: matches the selector of deployment but is not its own"
        " (controller: someone-else)"
    ]


def _restarted(generation: int = 2, observed: int = 2) -> dict[str, Any]:
    # Once observed, the controller has recorded its new ReplicaSet's revision (2).
    dep = deployment(generation=generation, observed=observed, revision=observed)
    dep["spec"]["template"]["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "t"}
    return dep


def _new_rs() -> dict[str, Any]:
    rs = replicaset("rs-2", revision=2)
    rs["spec"]["template"]["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "t"}
    return rs


def _new_pod(uid: str) -> dict[str, Any]:
    p = pod(uid, "rs-2")
    p["metadata"]["annotations"] = {"kubectl.kubernetes.io/restartedAt": "t"}
    return p


def test_an_allowed_template_change_and_its_rollout_are_no_fault() -> None:
    # `kubectl rollout restart`: an unowned pod-template annotation, then a whole rollout
    # (fewer Ready pods of the new template, pods of the old one still running).
    judge = TrialJudge(DESIRED, "deployment", None, reading(T0 - 1))
    rs = [replicaset("rs-1"), _new_rs()]
    steps = [
        (T0 + 0.1, reading(dep=_restarted(2, 1))),
        (T0 + 0.2, reading(dep=_restarted(), rs=rs, pods=[pod("p1"), pod("p2"), _new_pod("n1")])),
        (T0 + 0.3, reading(dep=_restarted(), rs=rs, pods=[pod("p1"), _new_pod("n1")])),
        (T0 + 0.5, reading(dep=_restarted(), rs=rs, pods=[_new_pod(u) for u in "abc"])),
    ]
    judge = TrialJudge(DESIRED, None, None, reading(T0 - 1))
    m = _measure(judge, steps)
    assert m.status == "no-fault", m
    mid = judge.observe(steps[2][1], T0 + 0.3)
    assert not mid.holds and not mid.fault  # not holding, yet no fault
    assert any(p.startswith("pods.") for p in mid.problems)  # the rollout itself is judged
    # Its new ReplicaSet and pod before the Deployment's change (one watch stream per kind):
    # the old template's Deployment must not make the new pod stale or a fault.
    early = reading(rs=rs, pods=[pod("p1"), pod("p2"), pod("p3"), _new_pod("n1")])
    assert judge.observe(early, T0 + 0.05).fault == ()


def test_a_real_template_change_is_still_a_fault_with_its_rollout() -> None:
    judge = TrialJudge(DESIRED, None, None, reading(T0 - 1))
    changed = reading(dep=deployment(image="shop:chaos", generation=2, observed=2))
    assert judge.observe(changed, T0 + 0.1).fault[0].startswith("deployment.spec.template")
    # Reverted to the baseline template: the rollout back is part of the heal, a fault too.
    # (The controller numbers the old ReplicaSet it reuses above the others, 3.)
    back = reading(dep=deployment(revision=3),
                   rs=[replicaset("rs-1", revision=3),
                       replicaset("rs-2", revision=2, image="shop:chaos")],
                   pods=[pod("p1"), pod("p2"), pod("n1", "rs-2")])  # fmt: skip
    assert judge.observe(back, T0 + 0.2).fault
    # The same state before the Deployment's newest revision reached the reading (another
    # watch stream): not judged yet, but its template change was seen already.
    ahead = reading(rs=[replicaset("rs-1", revision=3),
                        replicaset("rs-2", revision=2, image="shop:chaos")],
                    pods=[pod("p1"), pod("p2"), pod("n1", "rs-2")])  # fmt: skip
    assert not judge.observe(ahead, T0 + 0.2).holds


def test_an_object_being_deleted_is_drift_healed_only_by_a_new_object() -> None:
    judge = TrialJudge(DESIRED, "service", None, reading(T0 - 1))
    held = service()
    held["metadata"].update(deletionTimestamp="2026-12-04T20:00:00Z", finalizers=["x.io/hold"])
    obs = judge.observe(reading(svc=held), T0 + 0.1)
    assert (
        obs.fault[0] == "service: being deleted since 2026-12-04T20:00:00Z (finalizers: x.io/hold)"
    )
    m = _measure(judge, [(T0 + 0.1, reading(svc=held)), (T0 + 0.2, reading(svc=service("svc-2")))])
    assert m.status == "healed"


def test_a_change_reverted_inside_a_watch_gap_is_still_seen() -> None:
    before = {"webapp": deployment(generation=1)}
    after = {"webapp": deployment(generation=3)}
    after["webapp"]["metadata"]["name"] = before["webapp"]["metadata"]["name"] = "webapp"
    assert gap_changes("Deployment", before, after) == {"Deployment/webapp": "generation 1 -> 3"}
    svc_before, svc_after = service(), service()
    svc_after["metadata"]["resourceVersion"] = "9"
    name = svc_before["metadata"]["name"]
    assert gap_changes("Service", {name: svc_before}, {name: svc_after}) == {
        f"Service/{name}": "resourceVersion 1 -> 9"
    }
    assert gap_changes("Service", {name: svc_before}, {name: svc_before}) == {}
    # The relist's reading shows the same spec as before the gap, yet the fault is seen.
    judge = TrialJudge(DESIRED, None, None, reading(T0 - 1))
    healthy = reading()
    dep_name = DESIRED.items[0].name
    relisted = Reading(
        healthy.at, healthy.objects, gap={f"Deployment/{dep_name}": "generation 1 -> 3"}
    )
    m = _measure(judge, [(T0 + 0.5, relisted), (T0 + 0.6, reading())])
    assert m.status == "healed" and m.seen is not None
    assert "changed while the watch was relisting" in m.seen.detail
