"""The generated manifests: committed == generated, and the CRD says what the issue asks."""

from __future__ import annotations

from typing import Any

import yaml

from webapp_operator import manifests
from webapp_operator.crd import CEL_RULES, build_crd, openapi_schema


def _walk(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    found = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.items():
            found += _walk(value, f"{path}.{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _walk(value, f"{path}[{index}]")
    return found


def test_committed_manifests_are_the_generated_ones() -> None:
    assert manifests.main(["--check"]) == 0, "run `make manifests` and commit the result"


def test_check_reports_a_stale_file(tmp_path: Any, monkeypatch: Any) -> None:
    stale = tmp_path / "crd.yaml"
    stale.write_text("# hand-edited\n")
    monkeypatch.setattr(manifests, "generated_files", lambda: {stale: lambda: "generated: true\n"})
    assert manifests.main(["--check"]) == 1
    assert stale.read_text() == "# hand-edited\n"  # --check never writes
    assert manifests.main([]) == 0
    assert stale.read_text() == "generated: true\n"


def test_committed_crd_parses_to_the_built_one() -> None:
    assert yaml.safe_load(manifests.CRD_PATH.read_text()) == build_crd()


def test_crd_identity_and_subresources() -> None:
    crd = build_crd()
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "webapps.example.com"
    assert (spec["group"], spec["scope"], spec["names"]["kind"]) == (
        "example.com",
        "Namespaced",
        "WebApp",
    )
    (version,) = spec["versions"]
    assert version["name"] == "v1" and version["served"] and version["storage"]
    assert version["subresources"]["status"] == {}
    assert version["subresources"]["scale"] == {
        "specReplicasPath": ".spec.replicas",
        "statusReplicasPath": ".status.replicas",
        "labelSelectorPath": ".status.selector",
    }
    columns = {c["name"]: c["jsonPath"] for c in version["additionalPrinterColumns"]}
    assert columns == {
        "Replicas": ".spec.replicas",
        "Ready": ".status.readyReplicas",
        "Image": ".spec.image",
        "Phase": ".status.phase",
        "Age": ".metadata.creationTimestamp",
    }


def test_schema_is_structural() -> None:
    # A structural schema must not combine additionalProperties with properties.
    for path, node in _walk(openapi_schema()):
        assert not ("properties" in node and "additionalProperties" in node), path


def test_spec_schema_has_defaults_and_ranges() -> None:
    spec = openapi_schema()["properties"]["spec"]
    props = spec["properties"]
    assert spec["required"] == ["image"]
    assert props["replicas"] == {
        "default": 1,
        "description": "Number of pods.",
        "minimum": 0,
        "type": "integer",
    }
    assert (props["port"]["default"], props["port"]["minimum"], props["port"]["maximum"]) == (
        8080,
        1,
        65535,
    )
    assert props["env"]["items"]["properties"]["name"]["pattern"] == "^[A-Za-z_][A-Za-z0-9_]*$"
    assert props["env"]["maxItems"] == 64  # bounds the CEL uniqueness rule's cost


def test_status_schema_has_conditions_in_metav1_shape() -> None:
    status = openapi_schema()["properties"]["status"]
    props = status["properties"]
    assert set(props) == {
        "replicas",
        "readyReplicas",
        "phase",
        "conditions",
        "observedGeneration",
        "selector",
    }
    assert props["phase"]["enum"] == ["Pending", "Progressing", "Running", "Degraded", "Deleting"]
    conditions = props["conditions"]
    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert set(item["properties"]) == {
        "type",
        "status",
        "reason",
        "message",
        "lastTransitionTime",
        "observedGeneration",
    }
    assert set(item["required"]) == {"type", "status", "reason", "message", "lastTransitionTime"}
    # Status is written whole by the operator; defaults there would be noise.
    assert not [path for path, node in _walk(status) if "default" in node]


def test_cel_rules_sit_where_they_apply() -> None:
    schema = openapi_schema()
    assert schema["x-kubernetes-validations"] == CEL_RULES[""]
    spec = schema["properties"]["spec"]["properties"]
    assert spec["env"]["x-kubernetes-validations"] == CEL_RULES["spec.env"]
    assert spec["resources"]["x-kubernetes-validations"] == CEL_RULES["spec.resources"]
    messages = [rule["message"] for rules in CEL_RULES.values() for rule in rules]
    assert "env names must be unique" in messages
    assert "resources.limits.cpu must be >= resources.requests.cpu" in messages
