"""A reading that holds a workload older than its children (one watch stream per kind: the new
ReplicaSet or its pods can come before the change of the Deployment that made them) is not
judged yet: its pods are not taken for stale or foreign ones, and that alone is no fault."""

from __future__ import annotations

from typing import Any

from compare.judge.rollout import (
    PENDING_STATE,
    REVISION,
    REVISION_HASH,
    pod_set_problems,
    rollout_problems,
)
from compare.judge.verdict import only_pending

DEPLOY = "deploy-uid"


def _deployment(revision: int) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "uid": DEPLOY,
            "generation": 3,
            "annotations": {REVISION: str(revision)},
        },
        "spec": {"replicas": 1, "template": {"metadata": {"labels": {"app": "web"}}}},
        "status": {"observedGeneration": 3},
    }


def _replicaset(name: str, revision: int, restarted: bool = False) -> dict[str, Any]:
    labels = {"app": "web", "pod-template-hash": name}
    annotations = {"kubectl.kubernetes.io/restartedAt": "now"} if restarted else {}
    return {
        "kind": "ReplicaSet",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "annotations": {REVISION: str(revision)},
            "ownerReferences": [{"kind": "Deployment", "uid": DEPLOY, "controller": True}],
        },
        "spec": {"template": {"metadata": {"labels": labels, "annotations": annotations}}},
    }


def _pod(name: str, owner: str, kind: str = "ReplicaSet", **labels: str) -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "uid": f"uid-{name}",
            "labels": {"app": "web", **labels},
            "ownerReferences": [{"kind": kind, "uid": owner, "controller": True}],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True"}]},
    }


def test_a_replicaset_numbered_above_its_deployment_is_a_reading_behind() -> None:
    # `kubectl rollout restart`: the new ReplicaSet (revision 2) and its pod reached the reading,
    # the Deployment's changed template (and its revision 2) not yet.
    old, new = _replicaset("old", 1), _replicaset("new", 2, restarted=True)
    pods = [_pod("a", "uid-old"), _pod("b", "uid-new")]
    found = rollout_problems(_deployment(1), [old, new], pods, root="deployment")
    assert found == [f"deployment: {PENDING_STATE}"]
    assert only_pending(found[0])


def test_a_pod_of_a_replicaset_not_in_the_reading_is_a_reading_behind() -> None:
    found = rollout_problems(
        _deployment(1), [_replicaset("old", 1)], [_pod("b", "uid-unseen")], root="deployment"
    )
    assert found == [f"deployment: {PENDING_STATE}"]


def test_a_consistent_reading_of_a_rollout_in_progress_is_judged() -> None:
    # The same rollout once the Deployment's revision is in the reading: the old pod is stale.
    deployment = _deployment(2)
    deployment["spec"]["template"] = {
        "metadata": {
            "labels": {"app": "web"},
            "annotations": {"kubectl.kubernetes.io/restartedAt": "now"},
        }
    }
    old, new = _replicaset("old", 1), _replicaset("new", 2, restarted=True)
    found = rollout_problems(deployment, [old, new], [_pod("a", "uid-old")], root="deployment")
    assert found == [
        "pods.ready: want 1, got 0",
        "pods.stale: 1 pod(s) of another ReplicaSet still running",
    ]
    assert not any(only_pending(p) for p in found)


def test_a_pod_of_no_replicaset_at_all_is_foreign_not_pending() -> None:
    bare = _pod("x", "someone", kind="Job")
    found = rollout_problems(_deployment(1), [_replicaset("old", 1)], [bare], root="deployment")
    assert "pods.ready: want 1, got 0" in found
    assert any("not its own" in p for p in found)


SET = "sts-uid"


def _statefulset(update: str) -> dict[str, Any]:
    return {
        "kind": "StatefulSet",
        "metadata": {"name": "db", "uid": SET, "generation": 2},
        "spec": {"replicas": 1},
        "status": {"observedGeneration": 2, "updateRevision": update},
    }


def _revision(name: str, number: int) -> dict[str, Any]:
    # As the StatefulSet controller makes it: named `<set>-<hash>`, labelled with the hash
    # alone; its pods and `status.updateRevision` carry the whole name.
    return {
        "kind": "ControllerRevision",
        "metadata": {
            "name": name,
            "labels": {"controller.kubernetes.io/hash": name.rsplit("-", 1)[-1]},
            "ownerReferences": [{"kind": "StatefulSet", "uid": SET, "controller": True}],
        },
        "revision": number,
    }


def _member(name: str, revision: str) -> dict[str, Any]:
    pod = _pod(name, SET, kind="StatefulSet")
    pod["metadata"]["labels"][REVISION_HASH] = revision
    return pod


def test_a_controller_revision_numbered_above_the_current_one_is_a_reading_behind() -> None:
    revisions = [_revision("db-1", 1), _revision("db-2", 2)]
    found = pod_set_problems(
        _statefulset("db-1"), [_member("db-0", "db-2")], root="statefulset", revisions=revisions
    )
    assert found == [f"statefulset: {PENDING_STATE}"]


def test_a_pod_of_a_revision_not_in_the_reading_is_a_reading_behind() -> None:
    found = pod_set_problems(
        _statefulset("db-1"),
        [_member("db-0", "db-9")],
        root="statefulset",
        revisions=[_revision("db-1", 1)],
    )
    assert found == [f"statefulset: {PENDING_STATE}"]


def test_a_pod_of_an_older_revision_in_a_consistent_reading_is_stale() -> None:
    revisions = [_revision("db-1", 1), _revision("db-2", 2)]
    found = pod_set_problems(
        _statefulset("db-2"), [_member("db-0", "db-1")], root="statefulset", revisions=revisions
    )
    assert found == [
        "pods.ready: want 1, got 0",
        "pods.stale: 1 pod(s) of another revision still running",
    ]
