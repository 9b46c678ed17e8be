"""Rules by workload kind (compare.judge.workloads): pure functions on API-shaped objects."""

from __future__ import annotations

from typing import Any

from compare.judge.workloads import (
    as_own,
    carries_own_uid,
    daemon_nodes,
    daemonset_problems,
    finished,
    hpa_ranges,
    job_problems,
    scaled_replicas_allowed,
    statefulset_problems,
)


def _node(name: str, labels: dict[str, str] | None = None, taints: list[Any] | None = None) -> Any:
    return {"metadata": {"name": name, "labels": labels or {}}, "spec": {"taints": taints or []}}


def _daemonset(pod_spec: dict[str, Any], scheduled: int, generation: int = 1) -> Any:
    return {
        "kind": "DaemonSet",
        "metadata": {"name": "agent", "generation": generation},
        "spec": {"template": {"spec": pod_spec}},
        "status": {"observedGeneration": 1, "desiredNumberScheduled": scheduled},
    }


NODES = [
    _node("a", {"disk": "ssd", "zone": "1"}),
    _node("b", {"disk": "hdd", "zone": "2"}),
    _node("c", {"zone": "3"}, [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]),
    _node(
        "d", {"zone": "4"}, [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]
    ),
    _node("e", {"zone": "5"}, [{"key": "soft", "effect": "PreferNoSchedule"}]),
]


def test_a_daemonset_runs_where_its_selector_affinity_and_taints_allow() -> None:
    every = _daemonset({}, 4)
    # c's taint is not tolerated; the controller tolerates d's unschedulable taint itself;
    # PreferNoSchedule never keeps a daemon pod away.
    assert daemon_nodes(every, NODES) == ["a", "b", "d", "e"]
    ssd = _daemonset({"nodeSelector": {"disk": "ssd"}}, 1)
    assert daemon_nodes(ssd, NODES) == ["a"]
    affinity = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["2", "3"]}]},
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["e"]}]},
                ]
            }
        }
    }
    assert daemon_nodes(_daemonset({"affinity": affinity}, 2), NODES) == ["b", "e"]
    tolerant = _daemonset({"tolerations": [{"operator": "Exists"}]}, 5)
    assert daemon_nodes(tolerant, NODES) == ["a", "b", "c", "d", "e"]
    keyed = _daemonset({"tolerations": [{"key": "dedicated", "value": "db"}]}, 5)
    assert daemon_nodes(keyed, NODES) == ["a", "b", "c", "d", "e"]
    greater = {"matchExpressions": [{"key": "zone", "operator": "Gt", "values": ["3"]}]}
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [greater]}
            }
        }
    }
    assert daemon_nodes(_daemonset(spec, 2), NODES) == ["d", "e"]


def test_the_controllers_count_is_proven_against_the_nodes() -> None:
    assert daemonset_problems(_daemonset({}, 4), NODES, root="daemonset") == []
    wrong = daemonset_problems(_daemonset({}, 2), NODES, root="daemonset")
    assert wrong == [
        "daemonset.status.desiredNumberScheduled: 2, but 4 node(s) match its pod template"
        " (nodeSelector, node affinity, taints)"
    ]
    # Not observed yet: the rollout rule says so; without nodes there is nothing to prove.
    assert daemonset_problems(_daemonset({}, 2, generation=2), NODES, root="d") == []
    assert daemonset_problems(_daemonset({}, 2), [], root="d") == []


def test_hpa_owns_the_replicas_within_its_range_only() -> None:
    hpa: dict[str, Any] = {
        "kind": "HorizontalPodAutoscaler",
        "spec": {
            "scaleTargetRef": {"kind": "Deployment", "name": "web"},
            "minReplicas": 2,
            "maxReplicas": 4,
        },
    }
    ranges = hpa_ranges([hpa, {"kind": "Deployment", "metadata": {"name": "web"}}])
    assert ranges == {("Deployment", "web"): (2, 4)}
    live = {"spec": {"replicas": 3}}
    assert scaled_replicas_allowed("Deployment", "web", live, ranges)
    assert not scaled_replicas_allowed("Deployment", "web", {"spec": {"replicas": 0}}, ranges)
    assert not scaled_replicas_allowed("Deployment", "web", {"spec": {"replicas": 9}}, ranges)
    assert not scaled_replicas_allowed("Deployment", "other", live, ranges)
    assert not scaled_replicas_allowed("StatefulSet", "web", live, ranges)
    # minReplicas defaults to 1.
    default: dict[str, Any] = {"kind": hpa["kind"], "spec": {**hpa["spec"], "minReplicas": None}}
    assert hpa_ranges([default]) == {("Deployment", "web"): (1, 4)}


def _pod(name: str, owner: str, *, deleting: bool = False, phase: str = "Running") -> Any:
    meta: dict[str, Any] = {"name": name, "ownerReferences": [{"uid": owner, "controller": True}]}
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": meta, "status": {"phase": phase}}


def test_statefulset_pods_are_its_ordinals() -> None:
    sts = {"metadata": {"name": "db", "uid": "u1"}, "spec": {"replicas": 2}}
    pods = [_pod("db-0", "u1"), _pod("db-1", "u1")]
    assert statefulset_problems(sts, pods, root="statefulset") == []
    assert statefulset_problems(sts, [pods[0]], root="statefulset") == [
        "statefulset.pods: db-1 missing"
    ]
    extra = [*pods, _pod("db-2", "u1"), _pod("db-3", "u1", deleting=True), _pod("db-4", "x")]
    assert statefulset_problems(sts, extra, root="statefulset") == [
        "statefulset.pods: db-2 beyond its ordinals"
    ]
    shifted = {
        "metadata": {"name": "db", "uid": "u1"},
        "spec": {"replicas": 1, "ordinals": {"start": 1}},
    }
    assert statefulset_problems(shifted, [_pod("db-1", "u1")], root="s") == []


def test_a_job_is_judged_by_completion() -> None:
    def job(conditions: list[Any], **status: int) -> Any:
        return {"spec": {"completions": 1}, "status": {"conditions": conditions, **status}}

    done = job([{"type": "Complete", "status": "True"}], succeeded=1)
    assert job_problems(done, root="job") == []
    running = job([], active=1)
    assert job_problems(running, root="job") == [
        "job.status: not complete yet (0 of 1 succeeded, 1 active)"
    ]
    failed = job(
        [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded", "message": "x"}]
    )
    assert job_problems(failed, root="job") == ["job.status: failed (BackoffLimitExceeded: x)"]
    assert finished(_pod("p", "u", phase="Succeeded"))
    assert finished(_pod("p", "u", phase="Failed"))
    assert not finished(_pod("p", "u"))


def test_an_objects_own_uid_in_its_spec_is_the_live_objects() -> None:
    dry = {
        "metadata": {"uid": "dry-1", "labels": {}},
        "spec": {
            "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "dry-1"}},
            "template": {"metadata": {"labels": {"controller-uid": "dry-1"}}},
        },
    }
    assert carries_own_uid(dry)
    live = {"metadata": {"uid": "live-2"}}
    own = as_own(dry, live)
    assert own["spec"]["selector"]["matchLabels"] == {
        "batch.kubernetes.io/controller-uid": "live-2"
    }
    assert own["spec"]["template"]["metadata"]["labels"] == {"controller-uid": "live-2"}
    # Nothing to replace in an object that does not name itself.
    plain = {"metadata": {"uid": "dry-3"}, "spec": {"replicas": 1}}
    assert not carries_own_uid(plain)
    assert as_own(plain, None) is plain
