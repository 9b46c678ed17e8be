"""The forms derived from one WebApp: Helm values, the CR body and the desired state."""

from __future__ import annotations

from typing import Any

from compare.webapp import load_webapp, parse_webapp, selector_labels, to_cr, to_helm_values

APP: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {"name": "shop", "namespace": "prod"},
    "spec": {
        "replicas": 2,
        "image": "shop:1.4",
        "port": 9000,
        "env": [{"name": "MODE", "value": "fast"}, {"name": "EMPTY"}],
        "resources": {"limits": {"memory": "128Mi"}},
    },
}


def test_helm_values_carry_every_spec_field_under_chart_keys() -> None:
    values = to_helm_values(parse_webapp(APP))
    assert values == {
        "fullnameOverride": "shop",
        "replicaCount": 2,
        "image": "shop:1.4",
        "port": 9000,
        "env": [{"name": "MODE", "value": "fast"}, {"name": "EMPTY", "value": ""}],
        "resources": {"limits": {"memory": "128Mi"}},
    }


def test_helm_values_omit_unset_resources() -> None:
    bare = {**APP, "spec": {"image": "shop:1.4"}}
    assert "resources" not in to_helm_values(parse_webapp(bare))
    assert to_helm_values(load_webapp())["resources"] == {
        "requests": {"cpu": "50m", "memory": "64Mi"}
    }


def test_cr_body_keeps_the_spec_and_takes_the_namespace() -> None:
    webapp = parse_webapp(APP)
    assert to_cr(webapp, "other") == {
        "apiVersion": "example.com/v1",
        "kind": "WebApp",
        "metadata": {"name": "shop", "namespace": "other"},
        "spec": {
            **APP["spec"],
            "env": [{"name": "MODE", "value": "fast"}, {"name": "EMPTY", "value": ""}],
        },
    }
    assert to_cr(webapp)["metadata"]["namespace"] == "prod"


def test_selector_labels_are_name_and_instance_only() -> None:
    assert selector_labels("shop") == {
        "app.kubernetes.io/name": "webapp",
        "app.kubernetes.io/instance": "shop",
    }
