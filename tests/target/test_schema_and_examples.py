"""docs/target.schema.json is generated from the model and committed in sync; the examples
load, and the built-in WebApp's example says exactly what the toolkit deploys without one."""

from __future__ import annotations

import json
from pathlib import Path

from compare.approaches import builtin_target, load_target
from compare.approaches.schema import main, render, target_schema
from compare.deploy.chart_target import render_target
from compare.paths import CHARTS_DIR, EXAMPLES_DIR, OPERATOR_DIR
from compare.target.schema import SCHEMA_PATH
from compare.webapp import load_webapp, to_cr, to_helm_values


def test_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text() == render(), (
        "docs/target.schema.json is stale: run `python -m compare.approaches.schema`"
    )


def test_check_mode_fails_on_a_stale_file(tmp_path: Path) -> None:
    stale = tmp_path / "target.schema.json"
    stale.write_text(json.dumps({"type": "object"}))
    assert main(["--check", "--output", str(stale)]) == 1
    assert main(["--output", str(stale)]) == 0
    assert stale.read_text() == render()
    assert main(["--check", "--output", str(stale)]) == 0


def test_schema_refuses_unknown_keys_everywhere() -> None:
    seen = 0

    def walk(node: object, path: str) -> None:
        nonlocal seen
        if isinstance(node, dict):
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, path
                seen += 1
            for key, value in node.items():
                walk(value, f"{path}/{key}")
        elif isinstance(node, list):
            for index, value in enumerate(node):
                walk(value, f"{path}/{index}")

    walk(target_schema(), "")
    assert seen >= 8  # the file, helm, chart, operator, install, its chart, ready, flux


def test_the_webapp_example_is_the_built_in_webapp() -> None:
    target = load_target(EXAMPLES_DIR / "target-webapp.yaml")
    webapp = load_webapp()
    assert list(target.arms) == ["helm", "operator", "flux", "argocd"]
    for name in ("helm", "flux", "argocd"):
        chart = target.chart_arm(name)
        assert chart.chart.path == CHARTS_DIR / "webapp", name
        assert chart.values == to_helm_values(webapp), name
        assert chart.release == webapp.name, name
    operator = target.operator_arm("operator")
    assert operator.toolkit
    assert list(operator.resources) == [to_cr(webapp)]
    # The same operator installed into a cluster (a real one: its manager runs in pods).
    incluster = load_target(EXAMPLES_DIR / "target-webapp-incluster.yaml")
    assert list(incluster.arms) == ["operator"] and incluster.name == target.name
    operator = incluster.operator_arm("operator")
    assert operator.install.kustomize == OPERATOR_DIR / "config" / "default"
    assert list(operator.resources) == [to_cr(webapp)]
    assert operator.ready_condition == "Available"


def test_the_built_in_target_is_the_webapp_example() -> None:
    # What every command deploys without --target (`builtin_target`) is the example file's
    # chart arms, field for field: the same chart, values and release.
    from_file = load_target(EXAMPLES_DIR / "target-webapp.yaml")
    built_in = builtin_target(load_webapp())
    assert built_in.name == from_file.name
    for arm in ("helm", "flux", "argocd"):
        assert built_in.arms[arm] == from_file.arms[arm], arm
    # Its operator arm is the toolkit's own operator, as the example's, with the same WebApp
    # resource.
    operator = built_in.operator_arm("operator")
    assert operator.toolkit
    assert operator.resources == from_file.operator_arm("operator").resources


def test_the_operator_chart_example_names_the_operator_chart() -> None:
    target = load_target(EXAMPLES_DIR / "target-operator-chart.yaml")
    assert target.chart_arm("helm").chart.path == CHARTS_DIR / "webapp-operator"
    assert target.namespace == "webapp-system"
    # Runnable by `compare run`: rendered into a trial's namespace, every namespaced object
    # lands in it (a `watchNamespaces` list would put Roles elsewhere, which is refused).
    rendered = render_target(target, target.chart_arm("helm"), "cmp-trial-ns")
    kinds = {obj["kind"] for obj in rendered}
    assert {"Deployment", "ServiceAccount", "Secret", "ClusterRole"} <= kinds
    assert {obj["metadata"].get("namespace", "cmp-trial-ns") for obj in rendered} == {
        "cmp-trial-ns"
    }


def test_the_shop_example_is_one_app_by_its_chart_and_by_its_operator() -> None:
    target = load_target(EXAMPLES_DIR / "target-shop.yaml")
    assert list(target.arms) == ["helm", "operator"]
    operator = target.operator_arm("operator")
    assert operator.install.form == "alreadyInstalled"
    (cr,) = operator.resources
    spec, values = cr["spec"], target.chart_arm("helm").values
    assert (
        (spec["replicas"], spec["image"])
        == (values["replicaCount"], values["image"])
        == (
            5,
            "shop:v2",
        )
    )
    assert spec["env"] == values["env"] and len(spec["env"]) == 3
    assert spec["resources"] == values["resources"]
    assert operator.ready_condition == "Available"
