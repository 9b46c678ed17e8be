"""What the table of kinds (`compare.judge.kinds`) derives: the workload kinds in the order an
app's workload is looked for, where each kind's pod template sits, the rules that judge each
kind (each with its call in the verdict), and the readiness its controller reports."""

from __future__ import annotations

from typing import Any

import pytest

from compare.judge import as_given
from compare.judge.kinds import (
    KINDS,
    POD_MAKERS,
    RULED_KINDS,
    WORKLOAD_KINDS,
    pod_template,
    template_path,
    workload_kind,
)
from compare.judge.rollout import reported_problem, wanted_pods
from compare.judge.verdict import RULES

TEMPLATE = {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "web"}]}}


def test_the_workload_kinds_in_the_order_an_apps_workload_is_looked_for() -> None:
    assert WORKLOAD_KINDS == ("Deployment", "StatefulSet", "DaemonSet")
    assert POD_MAKERS == ("Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob")


@pytest.mark.parametrize(
    ("kind_name", "path"),
    [
        ("Deployment", ("spec", "template")),
        ("ReplicaSet", ("spec", "template")),
        ("StatefulSet", ("spec", "template")),
        ("DaemonSet", ("spec", "template")),
        ("Job", ("spec", "template")),
        ("CronJob", ("spec", "jobTemplate", "spec", "template")),
        ("Pod", ()),
        ("Service", None),
        ("Gadget", None),
    ],
)
def test_template_path_per_kind(kind_name: str, path: tuple[str, ...] | None) -> None:
    assert template_path(kind_name) == path


def test_pod_template_reads_each_kinds_own_path() -> None:
    cronjob = {"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": TEMPLATE}}}}
    assert pod_template(cronjob) == TEMPLATE
    assert pod_template({"kind": "StatefulSet", "spec": {"template": TEMPLATE}}) == TEMPLATE
    pod = {"kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    assert pod_template(pod) is pod


@pytest.mark.parametrize(
    "obj",
    [
        {"kind": "Deployment", "spec": {}},  # unset
        {"kind": "Deployment", "spec": {"template": "not a mapping"}},
        {"kind": "CronJob", "spec": {"template": TEMPLATE}},  # not where a CronJob's is
        {"kind": "Service", "spec": {"template": TEMPLATE}},  # makes no pods
        {"spec": {"template": TEMPLATE}},  # no kind
    ],
)
def test_pod_template_is_none_where_the_kind_has_none(obj: dict[str, Any]) -> None:
    assert pod_template(obj) is None


def test_every_rule_the_table_names_has_its_call_and_every_call_is_used() -> None:
    named = {rule for row in KINDS.values() for rule in row.rules}
    assert named == set(RULES)
    assert RULED_KINDS == ("Deployment", "StatefulSet", "DaemonSet", "Job")


def test_a_workload_is_a_kind_with_a_rollout_rule_and_a_pod_template() -> None:
    for name in WORKLOAD_KINDS:
        row = workload_kind(name)
        assert row is not None and row.rollout is not None and row.template
    assert workload_kind("Job") is None and workload_kind("Gadget") is None


def _desired(*kinds: str) -> Any:
    return as_given(
        [
            {"apiVersion": "apps/v1", "kind": k, "metadata": {"name": k.lower()}, "spec": {}}
            for k in kinds
        ]
    )


def test_what_a_desired_set_reads_follows_its_kinds_rules() -> None:
    # A StatefulSet's and a DaemonSet's pods are told by ControllerRevisions; a DaemonSet's pod
    # count is proven against the nodes.
    assert "ControllerRevision" not in _desired("Deployment").kinds
    assert "ControllerRevision" in _desired("StatefulSet").kinds
    assert "Node" not in _desired("StatefulSet").kinds
    assert {"ControllerRevision", "Node"} <= set(_desired("DaemonSet").kinds)


def test_a_per_node_workload_wants_one_pod_per_scheduled_node_and_has_no_replicas() -> None:
    daemonset = {
        "kind": "DaemonSet",
        "spec": {"replicas": 5},
        "status": {"desiredNumberScheduled": 2},
    }
    assert wanted_pods(daemonset) == 2
    assert wanted_pods({"kind": "StatefulSet", "spec": {"replicas": 5}}) == 5
    assert _desired("DaemonSet").replicas == 0
    assert _desired("StatefulSet").replicas == 1


def _workload(kind_name: str, status: dict[str, Any], **spec: Any) -> dict[str, Any]:
    meta = {"name": "web", "generation": 2}
    return {"kind": kind_name, "metadata": meta, "spec": spec, "status": status}


@pytest.mark.parametrize(
    ("obj", "why"),
    [
        (_workload("Deployment", {"observedGeneration": 1}), "Deployment web: not observed yet"),
        (_workload("ConfigMap", {"observedGeneration": 1}), "ConfigMap web: not observed yet"),
        (
            _workload(
                "Deployment",
                {"observedGeneration": 2, "readyReplicas": 3, "updatedReplicas": 2},
                replicas=3,
            ),
            "Deployment web: 2/3 ready",
        ),
        (
            _workload(
                "StatefulSet",
                {"observedGeneration": 2, "readyReplicas": 1, "updatedReplicas": 3},
                replicas=3,
            ),
            "StatefulSet web: 1/3 ready",
        ),
        (
            _workload("Deployment", {"observedGeneration": 2, "readyReplicas": 1}),
            "Deployment web: 0/1 ready",
        ),
        (
            _workload(
                "Deployment", {"observedGeneration": 2, "readyReplicas": 1, "updatedReplicas": 1}
            ),
            None,
        ),
        (
            _workload(
                "StatefulSet",
                {"observedGeneration": 2, "readyReplicas": 2, "updatedReplicas": 2},
                replicas=2,
            ),
            None,
        ),
        (
            _workload(
                "DaemonSet",
                {"observedGeneration": 2, "desiredNumberScheduled": 2, "numberReady": 1},
            ),
            "DaemonSet web: 1/2 ready",
        ),
        (
            _workload(
                "DaemonSet",
                {"observedGeneration": 2, "desiredNumberScheduled": 2, "numberReady": 2},
            ),
            None,
        ),
        (_workload("DaemonSet", {"observedGeneration": 2}), None),  # scheduled to no node
        ({"kind": "Service", "metadata": {"name": "web"}, "spec": {}}, None),
        (_workload("ReplicaSet", {"observedGeneration": 2}, replicas=3), None),  # no workload
    ],
)
def test_the_readiness_a_controller_reports(obj: dict[str, Any], why: str | None) -> None:
    assert reported_problem(obj) == why
