"""The target model knows no approach: its arm keys are the ones handed in (`ArmKey`s), each a
chart or an operator. Another set of keys is another file format - loaded, refused, described
by the schema and built into the built-in target alike - and the registry's keys are the four
approaches' (the committed schema's, `test_schema_and_examples`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from compare import approaches
from compare.errors import CompareError
from compare.target import ArmKey, HelmInstall, Operator, builtin_target, parse_target
from compare.target.model import target_file_model
from compare.target.schema import target_schema
from compare.webapp import load_webapp, to_cr

HEAD = {"apiVersion": "compare.example.com/v1alpha1", "kind": "Target", "name": "app"}
ARMS = (
    ArmKey("plain", "chart", "A plain chart, applied once."),
    ArmKey("kopfy", "operator", "Another operator."),
)
CR = {"apiVersion": "example.com/v1", "kind": "Shop", "metadata": {"name": "x"}}
OPERATOR = {"install": {"alreadyInstalled": True}, "resources": [CR], "ready": {"children": True}}


def _parse(tmp_path: Path, data: dict[str, Any]) -> Any:
    return parse_target(data, tmp_path / "compare.yaml", arms=ARMS)


def test_the_keys_handed_in_are_the_arms_of_their_kind(tmp_path: Path) -> None:
    (tmp_path / "chart").mkdir()
    (tmp_path / "chart" / "Chart.yaml").write_text("name: chart\n")
    target = _parse(tmp_path, {**HEAD, "plain": {"chart": {"path": "chart"}}, "kopfy": OPERATOR})
    assert list(target.arms) == ["plain", "kopfy"]
    plain = target.chart_arm("plain")
    assert (plain.where, plain.release, plain.chart.path) == ("plain", "app", tmp_path / "chart")
    assert target.operator_arm("kopfy").resources == (CR,)
    # An arm of the other kind is not given either (one line naming the key).
    with pytest.raises(CompareError, match=r"compare\.yaml: kopfy: not given"):
        target.chart_arm("kopfy")
    # A trial gets the chart arm under a release of its own; the operator arm as it is.
    trial = target.for_trial("cmp-plain-x-1-ab12")
    assert trial.chart_arm("plain").release.startswith("app-")
    assert trial.arms["kopfy"] is target.arms["kopfy"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        # Another approach's key is no key of this file.
        ({**HEAD, "helm": {"chart": {"path": "chart"}}}, "helm: unknown field"),
        (HEAD, "(root): name at least one approach: plain or kopfy"),
        ({**HEAD, "kopfy": {"chart": {"path": "chart"}}}, "kopfy.install: required field"),
        ({**HEAD, "plain": OPERATOR}, "plain.chart: required field is missing"),
        (
            {**HEAD, "kopfy": {**OPERATOR, "resources": ["nope.yaml"]}},
            "kopfy.resources[0]: nope.yaml: no such file",
        ),
    ],
)
def test_errors_name_the_key_handed_in(tmp_path: Path, data: dict[str, Any], message: str) -> None:
    with pytest.raises(CompareError) as caught:
        _parse(tmp_path, data)
    assert caught.value.message.startswith(f"{tmp_path / 'compare.yaml'}: {message}"), (
        caught.value.message
    )


def test_one_key_is_named_alone_when_none_is_given(tmp_path: Path) -> None:
    with pytest.raises(CompareError, match=r"name at least one approach: plain$"):
        parse_target(HEAD, tmp_path / "compare.yaml", arms=ARMS[:1])


def test_an_approach_may_not_take_a_key_of_every_target_file() -> None:
    with pytest.raises(ValueError, match="approach namespace: a target file's own key"):
        target_file_model((ArmKey("namespace", "chart", "x"),))


def test_the_schema_describes_the_keys_handed_in() -> None:
    properties = target_schema(ARMS)["properties"]
    assert list(properties) == [
        "apiVersion",
        "kind",
        "name",
        "namespace",
        "parts",
        "plain",
        "kopfy",
    ]
    assert properties["plain"]["description"] == "A plain chart, applied once."
    assert "chart" in properties["plain"]["properties"]
    assert properties["kopfy"]["description"] == "Another operator."
    assert {"install", "resources", "ready"} <= set(properties["kopfy"]["properties"])


def test_the_built_in_target_has_an_arm_of_each_kind_handed_in() -> None:
    webapp = load_webapp()
    target = builtin_target(webapp, arms=ARMS, release="rel")
    plain, kopfy = target.arms["plain"], target.arms["kopfy"]
    assert isinstance(plain, HelmInstall) and (plain.where, plain.release) == ("plain", "rel")
    assert isinstance(kopfy, Operator) and kopfy.toolkit and kopfy.resources == (to_cr(webapp),)
    assert target.webapps == (webapp,)


def test_the_registry_hands_in_every_approach_with_its_kind() -> None:
    keys = approaches.target_arms()
    assert [key.name for key in keys] == list(approaches.names())
    for key in keys:
        approach = approaches.get(key.name)
        assert key.kind == approach.arm_kind and key.description == approach.arm_description
        assert approach.charted == (key.kind == "chart")
    built_in = approaches.builtin_target(load_webapp())
    assert list(built_in.arms) == list(approaches.names())
    for key in keys:
        kind = HelmInstall if key.kind == "chart" else Operator
        assert isinstance(built_in.arms[key.name], kind), key.name
