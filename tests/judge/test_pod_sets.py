"""A StatefulSet's and a DaemonSet's pods, judged from the pods themselves: Ready, controlled by
the workload, of its current revision, as many as it wants; a pod of another revision still
running, or one fewer Ready pod, keeps the desired state from holding."""

from __future__ import annotations

from typing import Any

from compare.judge.rollout import REVISION_HASH, current_pods, pod_set_problems

UID = "sts-uid"


def _set(kind: str = "StatefulSet", **status: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {"name": "db", "uid": UID, "generation": 2},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 2, "updateRevision": "db-new", **status},
    }


def _pod(name: str, *, revision: str = "db-new", ready: bool = True, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {REVISION_HASH: revision},
            "ownerReferences": [{"uid": UID, "controller": True}],
            **meta,
        },
        "status": {"conditions": [{"type": "Ready", "status": "True" if ready else "False"}]},
    }


def test_every_wanted_pod_ready_of_the_current_revision_holds() -> None:
    pods = [_pod("db-0"), _pod("db-1")]
    assert pod_set_problems(_set(), pods, root="statefulset") == []
    assert [p["metadata"]["name"] for p in current_pods(_set(), pods)] == ["db-0", "db-1"]


def test_a_deleted_pod_not_yet_back_is_one_fewer_ready() -> None:
    pods = [_pod("db-1"), _pod("db-0", deletionTimestamp="2026-12-03T00:00:00Z")]
    assert pod_set_problems(_set(), pods, root="statefulset") == ["pods.ready: want 2, got 1"]


def test_a_pod_of_another_revision_is_a_rollout_not_finished() -> None:
    pods = [_pod("db-0"), _pod("db-1", revision="db-old")]
    assert pod_set_problems(_set(), pods, root="statefulset") == [
        "pods.ready: want 2, got 1",
        "pods.stale: 1 pod(s) of another revision still running",
    ]


def test_an_unobserved_spec_is_pending_and_other_owners_pods_do_not_count() -> None:
    pending = _set(observedGeneration=1)
    assert pod_set_problems(pending, [], root="statefulset") == [
        "statefulset.status.observedGeneration: want 2, got 1"
    ]
    stranger = _pod("db-0")
    stranger["metadata"]["ownerReferences"] = [{"uid": "other", "controller": True}]
    assert pod_set_problems(_set(), [stranger, _pod("db-1")], root="statefulset") == [
        "pods.ready: want 2, got 1"
    ]


def test_a_daemonset_wants_one_pod_per_scheduled_node() -> None:
    daemons = _set("DaemonSet", desiredNumberScheduled=3, updateRevision=None)
    pods = [_pod("agent-a"), _pod("agent-b"), _pod("agent-c", ready=False)]
    assert pod_set_problems(daemons, pods, root="daemonset") == ["pods.ready: want 3, got 2"]
