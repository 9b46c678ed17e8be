"""The webhook's rules (reusing the shared model) and its configuration."""

from __future__ import annotations

import base64

import pytest

from webapp_operator.admission import (
    SPEC_CHANGED,
    admission_problems,
    scale_problems,
    webhook_configuration,
)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"image": "Not An Image!!"}, "spec.image: 'Not An Image!!' is not a valid image"),
        ({"image": "a:v1", "env": [{"name": "PORT"}]}, "spec.env: 'PORT' is reserved"),
        (
            {"image": "a:v1", "env": [{"name": "KUBERNETES_X"}]},
            "spec.env: 'KUBERNETES_X' is reserved",
        ),
        ({"image": "a:v1", "replicas": 51}, "spec.replicas: 51 exceeds the ceiling of 50"),
        ({}, "spec.image: required field is missing"),
        ({"image": "a:v1", "bogus": 1}, "spec.bogus: unknown field"),
    ],
)
def test_bad_specs_are_named(spec: dict[str, object], message: str) -> None:
    problems = admission_problems(spec)
    assert len(problems) == 1
    assert problems[0].startswith(message)


def test_good_spec_is_admitted() -> None:
    assert admission_problems({"image": "registry.local:5000/team/app:v1", "replicas": 50}) == []


def test_scale_ceiling() -> None:
    assert scale_problems(50) == []
    assert scale_problems(51) == ["spec.replicas: 51 exceeds the ceiling of 50"]


def test_url_configuration() -> None:
    config = webhook_configuration(b"CA PEM", url="https://127.0.0.1:9443/")
    assert config["kind"] == "ValidatingWebhookConfiguration"
    main, scale = config["webhooks"]
    assert main["clientConfig"] == {
        "caBundle": base64.b64encode(b"CA PEM").decode(),
        "url": "https://127.0.0.1:9443/validate-webapp",
    }
    assert main["rules"][0]["resources"] == ["webapps"]
    assert main["rules"][0]["operations"] == ["CREATE", "UPDATE"]
    assert scale["rules"][0]["resources"] == ["webapps/scale"]
    assert scale["clientConfig"]["url"].endswith("/validate-webapp-scale")
    not_deleting = {"name": "not-deleting", "expression": "!has(object.metadata.deletionTimestamp)"}
    for hook in (main, scale):
        assert hook["failurePolicy"] == "Fail" and hook["sideEffects"] == "None"
    # Metadata-only updates of a WebApp are not sent (a scale always changes the replicas).
    assert main["matchConditions"] == [not_deleting, SPEC_CHANGED]
    assert scale["matchConditions"] == [not_deleting]


def test_service_configuration() -> None:
    service = {"namespace": "webapp-system", "name": "webapp-operator-webhook", "port": 443}
    config = webhook_configuration(b"x", service=service)
    assert config["webhooks"][0]["clientConfig"]["service"] == {
        **service,
        "path": "/validate-webapp",
    }
    with pytest.raises(ValueError, match="url or a service"):
        webhook_configuration(b"x")
