"""The chart's values.schema.json is generated from the WebApp model and committed in sync."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from compare.webapp import load_webapp, to_helm_values
from compare.webapp.schemas import spec_schema
from compare.webapp.values_schema import (
    SPEC_TO_VALUES,
    VALUES_SCHEMA_PATH,
    main,
    render,
    values_schema,
)


def test_committed_schema_is_the_generated_one() -> None:
    committed = VALUES_SCHEMA_PATH.read_text()
    assert committed == render(), (
        "charts/webapp/values.schema.json is stale: run `python -m compare.webapp.values_schema`"
    )


def test_check_mode_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "values.schema.json"
    stale.write_text(json.dumps({"type": "object"}))
    assert main(["--check", "--output", str(stale)]) == 1
    assert main(["--output", str(stale)]) == 0
    assert stale.read_text() == render()
    assert main(["--check", "--output", str(stale)]) == 0


def test_spec_fields_come_from_the_model() -> None:
    schema = values_schema()
    spec = spec_schema()["properties"]
    assert set(SPEC_TO_VALUES) == set(spec)
    for field, key in SPEC_TO_VALUES.items():
        generated = schema["properties"][key]
        # The model's constraints reach helm unchanged (image adds the validator's pattern).
        for constraint, value in spec[field].items():
            assert generated[constraint] == value, (key, constraint)
    assert schema["properties"]["replicaCount"]["minimum"] == 0
    assert schema["properties"]["port"]["maximum"] == 65535


def test_schema_is_strict_everywhere() -> None:
    def walk(node: object, path: str) -> None:
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, path
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    schema = values_schema()
    walk(schema, "")
    assert "image" in schema["required"]


def test_values_keys_match_what_the_converter_and_values_yaml_use() -> None:
    properties = set(values_schema()["properties"])
    assert set(to_helm_values(load_webapp())) <= properties
    defaults = yaml.safe_load((VALUES_SCHEMA_PATH.parent / "values.yaml").read_text())
    assert set(defaults) == properties
