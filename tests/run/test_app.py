"""The app under test behind one interface (`compare.run.app`): what a run plans from it
without a cluster - its default approaches, the parts that decide which faults apply (by the
arms asked for, never the built-in WebApp's for a target), whether the operator is the
toolkit's own, and how results.json names it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from compare import approaches
from compare.approaches import Approach, builtin_target, load_target
from compare.cluster import ClusterTarget
from compare.deploy.charts import webapp_manifest
from compare.errors import EXIT_USAGE, CompareError
from compare.paths import EXAMPLES_DIR
from compare.run import RunRequest, load_experiments
from compare.run.app import App
from compare.run.engine import runnable
from compare.run.preflight import chart_sharing
from compare.run.workload import Workload, workload_of
from compare.target.builtin import builtin_operator
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


def _recording() -> tuple[list[Approach], list[str]]:
    """Every registered approach, whose `prepare` and `recover` only say they were asked."""
    asked: list[str] = []
    found = []
    for approach in approaches.REGISTRY:

        class Recording(type(approach)):  # type: ignore[misc]
            def prepare(self, cluster: ClusterTarget) -> None:
                asked.append(f"prepare {self.name}")

            def recover(self, cluster: ClusterTarget) -> None:
                asked.append(f"recover {self.name}")

        found.append(cast(Approach, Recording()))
    return found, asked


def test_the_run_starts_every_shared_part_but_an_operator_the_target_installs(
    tmp_path: Path,
) -> None:
    cluster = ClusterTarget(tmp_path / "kubeconfig")  # never read: nothing is started here
    recording, asked = _recording()
    webapp = load_webapp()
    own = load_target(EXAMPLES_DIR / "target-webapp.yaml")  # every arm, the toolkit's operator
    incluster = load_target(EXAMPLES_DIR / "target-webapp-incluster.yaml")
    kustomized = replace(own, arms={**own.arms, "operator": incluster.arms["operator"]})
    every = ["helm", "operator", "flux", "argocd"]
    for target, started in [
        # The built-in target: every approach's controllers and the toolkit's operator.
        (builtin_target(webapp, DEFAULT_APP), every),
        # A file's own operator: its preflight installs it, nobody restarts it; the Flux and
        # Argo CD controllers its chart arms need are the run's to start, as the built-in's.
        (kustomized, ["helm", "flux", "argocd"]),
        # A file whose operator arm is the toolkit's: shared, started by the run too.
        (replace(own, arms={**own.arms, "operator": builtin_operator(webapp)}), every),
        # Only the arms it has.
        (load_target(EXAMPLES_DIR / "target-shop.yaml"), ["helm"]),
    ]:
        asked.clear()
        app = App(target)
        for approach in recording:
            app.prepare(approach, cluster)
            app.recover(approach, cluster)
        expected = [f"{verb} {name}" for name in started for verb in ("prepare", "recover")]
        assert asked == expected, target.source
        assert app.own_operator(("operator",)) == ("operator" in started)


def test_the_builtin_target_needs_no_preflight_and_keeps_its_names(tmp_path: Path) -> None:
    webapp = load_webapp()
    target = builtin_target(webapp, DEFAULT_APP)
    app = App(target)
    # Its chart and operator are the toolkit's own: nothing is deployed once before the
    # trials, nothing installed that a fault cluster would lack.
    assert app.preflight(ClusterTarget(tmp_path / "kubeconfig"), {}, timeout=1.0) == []
    assert app.per_cluster
    # A trial's release keeps the WebApp's name (its chart makes nothing cluster-scoped),
    # and two trials share nothing.
    assert target.for_trial("cmp-helm-image-change-1-ab12") is target
    assert chart_sharing(target, ("helm", "flux", "argocd")) == []
    # A target file's releases are the trial's own.
    shop = load_target(EXAMPLES_DIR / "target-shop.yaml")
    trial = shop.for_trial("cmp-helm-image-change-1-ab12").chart_arm("helm")
    assert trial.release != shop.chart_arm("helm").release
    assert not App(shop).per_cluster
