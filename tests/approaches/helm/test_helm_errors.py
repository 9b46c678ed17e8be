"""Helm's stderr as one line: the parser on messages helm actually prints."""

from __future__ import annotations

from compare.deploy.chart_errors import (
    describe_violation,
    field_path,
    first_error_line,
    schema_violation,
)

SCHEMA_STDERR = (
    "Error: values don't meet the specifications of the schema(s) in the following chart(s):\n"
    """webapp:
- at '/port': maximum: got 70,000, want 65,535
- at '/replicaCount': minimum: got -1, want 0
- at '': additional properties 'extra' not allowed
"""
)


def test_pointer_becomes_a_values_path() -> None:
    assert field_path("") == ""
    assert field_path("/replicaCount") == "replicaCount"
    assert field_path("/env/0/name") == "env[0].name"
    assert field_path("/podLabels/a~1b") == "podLabels.a/b"


def test_violations_are_reworded() -> None:
    assert describe_violation("/port", "maximum: got 70,000, want 65,535") == (
        "port: must be <= 65535"
    )
    assert describe_violation("", "missing property 'image'") == (
        "image: required field is missing"
    )
    assert describe_violation("/env/1", "missing properties 'name', 'value'") == (
        "env[1].name: required field is missing"
    )
    assert describe_violation("", "additional properties 'a', 'b' not allowed") == (
        "a: unknown key"
    )
    assert describe_violation("/x", "something new") == "x: something new"


def test_first_violation_with_a_count_of_the_rest() -> None:
    assert schema_violation(SCHEMA_STDERR) == "values: port: must be <= 65535 (and 2 more)"


def test_other_errors_are_not_schema_violations() -> None:
    stderr = 'level=WARN msg="upgrade failed"\nError: UPGRADE FAILED: conflict occurred\n- .spec\n'
    assert schema_violation(stderr) is None
    assert first_error_line(stderr) == "UPGRADE FAILED: conflict occurred"
    assert first_error_line("") == "no output"
