"""A fault that cannot change the app's object of the shape it has is left out at planning,
with the reason: an injection writing the value the object has already (a headless copy of a
headless Service), or a shape the API server refuses the injection for (`skip-when`: a
headless NodePort or LoadBalancer Service). Other shapes still run."""

from __future__ import annotations

from typing import Any

import pytest

from compare.run.experiments import load_spec
from compare.run.shape import check_rules, refused, unchanged
from compare.run.workload import workload_of

DEPLOYMENT = {
    "kind": "Deployment",
    "metadata": {"name": "web"},
    "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {
            "metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "web:1"}]},
        },
    },
}


def _app(**service: Any) -> Any:
    spec = {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80}], **service}
    return workload_of([DEPLOYMENT, {"kind": "Service", "metadata": {"name": "web"}, "spec": spec}])


@pytest.mark.parametrize(
    ("service", "reason"),
    [
        ({}, None),
        ({"type": "ClusterIP"}, None),
        ({"ipFamilyPolicy": "PreferDualStack"}, None),
        (
            {"clusterIP": "None"},
            "changes nothing: service.spec.clusterIP is 'None' in the app's manifest already",
        ),
        (
            {"type": "NodePort"},
            "the API server refuses clusterIP None for a NodePort or LoadBalancer Service"
            " (service.spec.type is 'NodePort' in the app's manifest)",
        ),
        (
            {"type": "LoadBalancer", "externalTrafficPolicy": "Local"},
            "the API server refuses clusterIP None for a NodePort or LoadBalancer Service"
            " (service.spec.type is 'LoadBalancer' in the app's manifest)",
        ),
    ],
)
def test_a_headless_copy_runs_only_where_it_changes_the_service(
    service: dict[str, Any], reason: str | None
) -> None:
    spec = load_spec("service-recreated-headless")
    assert spec.unmet(embedded=True, workload=_app(**service)) == reason


def test_a_patch_writing_the_value_already_there_is_skipped_whatever_the_fault() -> None:
    affinity = load_spec("service-session-affinity")
    assert affinity.unmet(embedded=True, workload=_app()) is None
    assert affinity.unmet(embedded=True, workload=_app(sessionAffinity="ClientIP")) == (
        "changes nothing: service.spec.sessionAffinity is 'ClientIP' in the app's manifest already"
    )
    # Every other Service fault still runs against a headless Service.
    for name in ("service-port-change", "service-selector-change", "service-delete"):
        assert load_spec(name).unmet(embedded=True, workload=_app(clusterIP="None")) is None, name


def test_only_a_patch_the_experiment_gives_is_read() -> None:
    document: dict[str, Any] = {
        "method": [
            {
                "type": "action",
                "name": "inject",
                "provider": {
                    "type": "python",
                    "module": "compare.chaos.actions",
                    "func": "patch_object",
                    "arguments": {
                        "kind": "${kind}",
                        "patch": {"spec": {"sessionAffinity": "${value}"}},
                        "patch_type": "merge",
                    },
                },
            }
        ]
    }
    objects = {"service": {"spec": {"sessionAffinity": "ClientIP"}}}
    field = "service.spec.sessionAffinity"
    values = {"kind": "service", "value": "ClientIP"}
    assert unchanged(document, "inject", field, objects, values) is not None
    assert unchanged(document, "inject", field, objects, {**values, "value": "None"}) is None
    assert unchanged(document, "other", field, objects, values) is None  # not the injection
    assert unchanged(document, "inject", None, objects, values) is None  # no field to read
    json_patch = document["method"][0]["provider"]["arguments"]
    json_patch["patch_type"] = "json"
    assert unchanged(document, "inject", field, objects, values) is None


def test_skip_when_rules_match_a_listed_value_and_are_checked() -> None:
    rules = [{"field": "service.spec.type", "values": ["NodePort"], "reason": "no"}]
    assert refused(rules, {"service": {"spec": {"type": "NodePort"}}}) == (
        "no (service.spec.type is 'NodePort' in the app's manifest)"
    )
    assert refused(rules, {"service": {"spec": {}}}) is None
    assert check_rules(rules) is None
    assert check_rules([{**rules[0], "values": "NodePort"}]) == (
        "[0].values: must be a non-empty list"
    )
    assert check_rules([{**rules[0], "field": "service..spec"}]) is not None
