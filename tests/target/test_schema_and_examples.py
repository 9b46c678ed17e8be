"""docs/target.schema.json is generated from the model and committed in sync; the examples
load, and the built-in WebApp's example says exactly what the toolkit deploys without one."""

from __future__ import annotations

import json
from pathlib import Path

from compare.deploy.helm_arm import helm_arm, render_target
from compare.paths import CHARTS_DIR, EXAMPLES_DIR, OPERATOR_DIR
from compare.target import builtin_target, load_target
from compare.target.schema import SCHEMA_PATH, main, render, target_schema
from compare.webapp import load_webapp, to_cr, to_helm_values


def test_committed_schema_is_the_generated_one() -> None:
    assert SCHEMA_PATH.read_text() == render(), (
        "docs/target.schema.json is stale: run `python -m compare.target.schema`"
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
    assert target.helm is not None and target.flux is not None and target.operator is not None
    assert target.helm.chart.path == CHARTS_DIR / "webapp"
    assert target.helm.values == to_helm_values(webapp)
    assert target.helm.release == webapp.name
    assert target.flux.chart.path == CHARTS_DIR / "webapp"
    assert target.flux.values == to_helm_values(webapp)
    assert target.argocd is not None and target.argocd.values == to_helm_values(webapp)
    assert target.argocd.chart.path == CHARTS_DIR / "webapp"
    assert target.operator.install.kustomize == OPERATOR_DIR / "config" / "default"
    assert list(target.operator.resources) == [to_cr(webapp)]
    assert target.operator.ready_condition == "Available"


def test_the_built_in_target_is_the_webapp_example() -> None:
    # What every command deploys without --target (`builtin_target`) is the example file's
    # chart arms, field for field: the same chart, values and release.
    from_file = load_target(EXAMPLES_DIR / "target-webapp.yaml")
    built_in = builtin_target(load_webapp())
    assert built_in.name == from_file.name
    for arm in ("helm", "flux", "argocd"):
        assert getattr(built_in, arm) == getattr(from_file, arm), arm
    # Its operator arm is the toolkit's own operator (the example installs the same operator
    # from its kustomize directory) with the same WebApp resource.
    assert built_in.operator is not None and from_file.operator is not None
    assert built_in.operator.toolkit
    assert built_in.operator.resources == from_file.operator.resources


def test_the_operator_chart_example_names_the_operator_chart() -> None:
    target = load_target(EXAMPLES_DIR / "target-operator-chart.yaml")
    assert target.helm is not None
    assert target.helm.chart.path == CHARTS_DIR / "webapp-operator"
    assert target.namespace == "webapp-system"
    # Runnable by `compare run`: rendered into a trial's namespace, every namespaced object
    # lands in it (a `watchNamespaces` list would put Roles elsewhere, which is refused).
    rendered = render_target(target, helm_arm(target), "cmp-trial-ns")
    kinds = {obj["kind"] for obj in rendered}
    assert {"Deployment", "ServiceAccount", "Secret", "ClusterRole"} <= kinds
    assert {obj["metadata"].get("namespace", "cmp-trial-ns") for obj in rendered} == {
        "cmp-trial-ns"
    }


def test_the_shop_example_is_one_app_by_its_chart_and_by_its_operator() -> None:
    target = load_target(EXAMPLES_DIR / "target-shop.yaml")
    assert target.helm is not None and target.operator is not None and target.flux is None
    assert target.operator.install.form == "alreadyInstalled"
    (cr,) = target.operator.resources
    spec, values = cr["spec"], target.helm.values
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
    assert target.operator.ready_condition == "Available"
