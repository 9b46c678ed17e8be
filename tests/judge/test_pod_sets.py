"""A StatefulSet's and a DaemonSet's pods, judged from the pods themselves: Ready, controlled by
the workload, of its current revision, as many as it wants; a pod of another revision still
running, or one fewer Ready pod, keeps the desired state from holding."""

from __future__ import annotations

from typing import Any

from compare.judge.rollout import (
    PENDING_REVISION,
    REVISION_HASH,
    current_pods,
    current_revision,
    pod_set_problems,
)
from compare.judge.verdict import only_pending

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


def test_an_unobserved_spec_is_pending_and_other_owners_pods_are_foreign() -> None:
    pending = _set(observedGeneration=1)
    assert pod_set_problems(pending, [], root="statefulset") == [
        "statefulset.status.observedGeneration: want 2, got 1"
    ]
    stranger = _pod("db-0")
    stranger["metadata"]["ownerReferences"] = [{"uid": "other", "controller": True}]
    # Not one of its pods, yet its selector (and so its Service) picks it: drift.
    assert pod_set_problems(_set(), [stranger, _pod("db-1")], root="statefulset") == [
        "pods.ready: want 2, got 1",
        "pod[db-0]: matches the selector of statefulset but is not its own (controller: other)",
    ]


TEMPLATE = {"metadata": {"labels": {"app": "agent"}}, "spec": {"containers": [{"name": "a"}]}}


def _daemons(**status: Any) -> dict[str, Any]:
    daemons = _set("DaemonSet", desiredNumberScheduled=3, **status)
    daemons["status"].pop("updateRevision")
    daemons["spec"] = {"template": TEMPLATE, "updateStrategy": {"type": "OnDelete"}}
    return daemons


def _revision(number: int, hashed: str, template: dict[str, Any]) -> dict[str, Any]:
    """A ControllerRevision as the DaemonSet controller stores it (its template as a patch)."""
    return {
        "metadata": {
            "name": f"db-{hashed}",
            "labels": {REVISION_HASH: hashed},
            "ownerReferences": [{"uid": UID, "controller": True}],
        },
        "revision": number,
        "data": {"spec": {"template": {**template, "$patch": "replace"}}},
    }


OLD_TEMPLATE = {**TEMPLATE, "spec": {"containers": [{"name": "a", "image": "old"}]}}
REVISIONS = [_revision(1, "db-old", OLD_TEMPLATE), _revision(2, "db-new", TEMPLATE)]


def test_a_daemonset_wants_one_pod_per_scheduled_node_of_its_current_revision() -> None:
    pods = [_pod("agent-a"), _pod("agent-b"), _pod("agent-c", ready=False)]
    assert current_revision(_daemons(), REVISIONS) == "db-new"
    assert pod_set_problems(_daemons(), pods, root="daemonset", revisions=REVISIONS) == [
        "pods.ready: want 3, got 2"
    ]


def test_a_daemonset_pod_of_an_old_revision_under_on_delete_is_drift() -> None:
    # The spec was reverted to the old template: revision 3 repeats revision 1's data (the
    # controller renumbers it); pods made from revision 2 are then the old ones.
    reverted = {**_daemons(), "spec": {"template": OLD_TEMPLATE}}
    revisions = [_revision(3, "db-old", OLD_TEMPLATE), _revision(2, "db-new", TEMPLATE)]
    pods = [_pod("agent-a"), _pod("agent-b"), _pod("agent-c", revision="db-old")]
    assert current_revision(reverted, revisions) == "db-old"
    assert pod_set_problems(reverted, pods, root="daemonset", revisions=revisions) == [
        "pods.ready: want 3, got 1",
        "pods.stale: 2 pod(s) of another revision still running",
    ]


def test_a_daemonset_without_a_revision_of_its_template_yet_is_pending() -> None:
    found = pod_set_problems(_daemons(), [_pod("agent-a")], root="daemonset", revisions=[])
    assert found == [f"daemonset: {PENDING_REVISION}"]
    assert only_pending(found[0])
