"""The operator is held to an independent reference: the chart's rendering of the same WebApp as
the operator applies it (`compare.approaches.operator.reference`), never its own builders. Its
builders must agree with that reference, through the API server's defaults, for every kind of
spec."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes import client

from compare.approaches import desired_manifest
from compare.approaches.operator.reference import CHART_METADATA_LABELS, operator_reference
from compare.judge import diff_object, with_api_defaults
from tests.helpers import make_webapp
from webapp_operator.names import OPERATOR_NAME

from .helpers import operator_manifest

# Both tests render the chart with the built helm; the second also needs the API server.
pytestmark = pytest.mark.cluster

SPECS: dict[str, dict[str, Any]] = {
    "plain": {},
    "no-replicas": {"replicas": 0},
    "env-and-resources": {
        "env": [{"name": "A", "value": "1"}, {"name": "EMPTY", "value": ""}],
        "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "1", "memory": "128Mi"}},
    },
    "other-port": {"port": 9090},
    "registry-image-no-tag": {"image": "registry.local:5000/team/shop"},
    "digest-image": {"image": "shop@sha256:" + "a" * 64},
}


def _by_kind(objects: Any) -> dict[str, Any]:
    return {obj["kind"]: obj for obj in objects}


def test_the_reference_is_the_chart_with_the_operators_own_differences() -> None:
    webapp = make_webapp("shop")
    helm = _by_kind(desired_manifest("helm", webapp, "ns"))
    reference = _by_kind(operator_reference(webapp, "ns"))
    assert desired_manifest("operator", webapp, "ns") == operator_reference(webapp, "ns")
    for kind, obj in reference.items():
        labels = obj["metadata"]["labels"]
        assert labels["app.kubernetes.io/managed-by"] == OPERATOR_NAME
        assert not set(CHART_METADATA_LABELS) & set(labels)
        assert obj["metadata"]["ownerReferences"][0]["kind"] == "WebApp"
        assert "annotations" not in obj["metadata"]  # Helm's release annotations are Helm's
        # Everything else is the chart's: the spec, field for field.
        assert obj["spec"].get("ports") == helm[kind]["spec"].get("ports")
    template = reference["Deployment"]["spec"]["template"]
    assert template["metadata"]["labels"]["app.kubernetes.io/managed-by"] == OPERATOR_NAME
    assert template["spec"] == helm["Deployment"]["spec"]["template"]["spec"]


@pytest.mark.parametrize("case", sorted(SPECS))
def test_the_operators_builders_agree_with_the_chart(
    api: client.ApiClient, namespace: str, case: str
) -> None:
    # Two implementations of one spec: a difference here is a bug of one of them (or a
    # difference of the approach that reference.py must name), never something to allow.
    webapp = make_webapp("shop", **SPECS[case])
    reference = with_api_defaults(api, namespace, operator_reference(webapp, namespace))
    built = with_api_defaults(api, namespace, operator_manifest(webapp, namespace))
    held = {(o.kind, o.name): o.defaulted for o in reference.items}
    made = {(o.kind, o.name): o.defaulted for o in built.items}
    assert held.keys() == made.keys()
    for key, obj in held.items():
        assert [str(m) for m in diff_object(key[0], obj, made[key])] == [], key
