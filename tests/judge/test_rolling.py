"""What a workload's rules report while an allowed rollout is under way, from the table of
kinds (`Kind.rolling`): fewer Ready pods of the new template and pods of the old one for every
workload kind, and, for a StatefulSet, an ordinal missing while its pod is made again."""

from __future__ import annotations

from compare.judge.kinds import KINDS, WORKLOAD_KINDS
from compare.judge.workloads import statefulset_problems


def test_every_workload_kind_passes_through_its_rollout_problems() -> None:
    for name in WORKLOAD_KINDS:
        row = KINDS[name]
        root = name.lower()
        assert row.rolling("pods.ready: want 2, got 1", root), name
        assert row.rolling("pods.stale: 1 pod(s) of another revision still running", root)
        assert not row.rolling(f"{root}.spec.template.spec.containers[a].image: x", root), name


def test_a_statefulset_ordinal_missing_is_its_rolling_update_an_extra_one_is_not() -> None:
    sts = {
        "metadata": {"name": "db", "uid": "u"},
        "spec": {"replicas": 2},
    }
    pod = {"metadata": {"name": "db-0", "ownerReferences": [{"uid": "u", "controller": True}]}}
    extra = {"metadata": {"name": "db-5", "ownerReferences": [{"uid": "u", "controller": True}]}}
    missing, beyond = statefulset_problems(sts, [pod, extra], root="statefulset")[::-1]
    assert missing == "statefulset.pods: db-1 missing"
    row = KINDS["StatefulSet"]
    assert row.rolling(missing, "statefulset")
    assert not row.rolling(beyond, "statefulset")  # a scale-down not done: no rollout
    assert not row.rolling(missing, "statefulset/other")  # another workload's root
    assert not KINDS["Deployment"].rolling(missing, "statefulset")
