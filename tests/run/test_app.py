"""The app under test behind one interface (`compare.run.app`): what a run plans from it
without a cluster - its default approaches, the parts that decide which faults apply (by the
arms asked for, never the built-in WebApp's for a target), whether the operator is the
toolkit's own, and how results.json names it."""

from __future__ import annotations

from pathlib import Path

import pytest

from compare.deploy.helm import webapp_manifest
from compare.errors import EXIT_USAGE, CompareError
from compare.paths import EXAMPLES_DIR
from compare.run import RunRequest, load_experiments
from compare.run.app import App
from compare.run.engine import runnable
from compare.run.workload import Workload, workload_of
from compare.target import builtin_target, load_target
from compare.webapp import DEFAULT_APP, load_webapp


def _stateful() -> Workload:
    return workload_of(
        [
            {
                "apiVersion": "apps/v1",
                "kind": "StatefulSet",
                "metadata": {"name": "db"},
                "spec": {
                    "selector": {"matchLabels": {"app": "db"}},
                    "template": {"spec": {"containers": [{"name": "db", "image": "db:1"}]}},
                },
            }
        ]
    )


def test_the_builtin_app_is_the_webapp_with_the_default_approaches() -> None:
    webapp = load_webapp()
    app = App(builtin_target(webapp, DEFAULT_APP))
    assert app.default_approaches() == ("helm", "operator", "flux")  # argocd is not default
    assert app.per_cluster  # no preflight: its shared parts start on any cluster
    app.check(("helm", "operator", "argocd"))
    rendered = workload_of(webapp_manifest(webapp)).configuration()
    assert [w.configuration() for w in app.workloads(("helm",))] == [rendered]
    assert [w.configuration() for w in app.workloads(("operator",))] == [rendered]
    assert app.own_operator(("operator",))
    assert app.target_info() is None
    assert (app.name, app.info().name) == (webapp.name, webapp.name)
    assert app.info().spec["image"] == webapp.spec.image


def test_a_target_defaults_to_the_arms_its_file_has() -> None:
    flux_only = App(load_target(EXAMPLES_DIR / "target-operator-chart-flux.yaml"))
    assert flux_only.default_approaches() == ("flux",)
    both = App(load_target(EXAMPLES_DIR / "target-shop.yaml"))
    assert both.default_approaches() == ("helm", "operator")
    info = both.target_info()
    assert info is not None and info.file.endswith("target-shop.yaml")
    assert both.info().spec == {}  # its values stay in the file


def test_a_flux_only_target_is_planned_by_its_chart_not_by_the_builtin_webapp(
    tmp_path: Path,
) -> None:
    # The chart arm's parts decide for any chart arm (here flux alone): a fault on a
    # Deployment is left out for a chart whose workload is a StatefulSet. Before, a target
    # without the helm arm fell back to the built-in WebApp's Deployment and ran it.
    target = load_target(EXAMPLES_DIR / "target-operator-chart-flux.yaml")
    app = App(target, chart_workload=_stateful())
    assert app.workloads(("flux",)) == [app.chart_workload]
    request = RunRequest(
        approaches=("flux",),
        experiments=tuple(load_experiments(["pod-delete-one", "deployment-paused"])),
        app=app,
        output_dir=tmp_path,
    )
    kept, skipped = runnable(request, embedded=True)
    assert [s.name for s in kept.experiments] == ["pod-delete-one"]
    assert list(skipped) == ["deployment-paused"]


def test_an_operator_arm_is_the_targets_own_operator() -> None:
    app = App(load_target(EXAMPLES_DIR / "target-shop.yaml"))
    assert not app.own_operator(("helm", "operator"))
    # Without its operator arm in the run, an operator fault has no operator of the target's.
    assert app.own_operator(("helm",))
    # Its chart's parts are its rendering's; its operator's are not known before its
    # preflight deployed it: nothing is left out for them yet.
    (chart,) = app.workloads(("helm", "operator"))
    assert chart.source == "the app's manifest" and chart.name is not None
    assert app.workloads(("operator",)) == []


def test_an_arm_the_file_lacks_is_one_line_naming_it() -> None:
    app = App(load_target(EXAMPLES_DIR / "target-operator-chart-flux.yaml"))
    with pytest.raises(CompareError) as caught:
        app.check(("argocd",))
    assert caught.value.exit_code == EXIT_USAGE
    assert caught.value.message.endswith("argocd: not given (this target has no argocd key)")
