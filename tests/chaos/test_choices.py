"""What a pod-template fault writes (compare.chaos.choices): an absent field is set or added,
a present one gets a value other than its own, never one the API server would refuse."""

from __future__ import annotations

import pytest

from compare.chaos.choices import NoChoice, cpu_request, label_value, readiness_probe


def _with(resources: dict[str, dict[str, str]]) -> dict[str, object]:
    return {"name": "app", "image": "app:1", "resources": resources}


def test_an_absent_cpu_request_is_set() -> None:
    assert cpu_request({"name": "app", "image": "app:1"}) == "250m"
    assert cpu_request(_with({})) == "250m"
    assert cpu_request(_with({"requests": {"memory": "64Mi"}})) == "250m"


def test_a_cpu_request_is_changed_never_to_its_own_value() -> None:
    assert cpu_request(_with({"requests": {"cpu": "50m"}})) == "250m"
    # The same quantity however written.
    assert cpu_request(_with({"requests": {"cpu": "250m"}})) == "100m"
    assert cpu_request(_with({"requests": {"cpu": "0.25"}})) == "100m"
    assert cpu_request(_with({"requests": {"cpu": "1"}}), "1000m") == "100m"


def test_a_cpu_request_is_never_above_the_cpu_limit() -> None:
    # The API server refuses a request above the limit: the first fallback under it.
    assert cpu_request(_with({"limits": {"cpu": "200m"}})) == "100m"
    assert cpu_request(_with({"limits": {"cpu": "100m"}, "requests": {"cpu": "100m"}})) == "10m"
    assert cpu_request(_with({"limits": {"cpu": "2"}})) == "250m"
    with pytest.raises(NoChoice, match="limit '1m'"):
        cpu_request(_with({"limits": {"cpu": "1m"}, "requests": {"cpu": "1m"}}))


def test_a_readiness_probe_period_is_changed() -> None:
    probe = {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5}
    assert readiness_probe({"name": "app", "readinessProbe": probe}) == {"periodSeconds": 30}
    probe["periodSeconds"] = 30
    assert readiness_probe({"name": "app", "readinessProbe": probe}) == {"periodSeconds": 15}
    # No period given: the API server's default (10) is what the probe has.
    assert readiness_probe({"readinessProbe": {"exec": {"command": ["x"]}}}, 10) == {
        "periodSeconds": 5
    }


def test_an_absent_readiness_probe_is_added_on_the_first_port() -> None:
    named = {"name": "app", "ports": [{"name": "web", "containerPort": 80}, {"name": "m"}]}
    assert readiness_probe(named) == {"tcpSocket": {"port": "web"}, "periodSeconds": 30}
    unnamed = {"name": "app", "ports": [{"containerPort": 6379}]}
    assert readiness_probe(unnamed, 20) == {"tcpSocket": {"port": 6379}, "periodSeconds": 20}
    # No port to check: an exec probe.
    assert readiness_probe({"name": "app"}) == {
        "exec": {"command": ["true"]},
        "periodSeconds": 30,
    }


def test_a_label_is_changed_or_added() -> None:
    key = "app.kubernetes.io/component"
    assert label_value({key: "web"}, key, "chaos") == "chaos"
    assert label_value({key: "chaos"}, key, "chaos") == "chaos-other"
    # Absent: added with the value asked for.
    assert label_value({"app": "x"}, key, "chaos") == "chaos"
    assert label_value(None, key, "chaos") == "chaos"
