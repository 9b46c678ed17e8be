"""A chart whose APIService is served by its own pods, on the embedded cluster (no pod runs
code: the APIService is never Available, and an unavailable one breaks API discovery of its
group for the whole cluster): found before anything is installed, and left out of the helm and
flux arms' install and desired state with `dropUnservedAPIServices` (through Flux, its binding
to a ClusterRole of the cluster's own installed by helm-controller, which may bind it)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import load_target
from compare.approaches.flux.arm import deploy_target_flux, undeploy_target_flux
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import (
    deploy_target,
    render_changes,
    rendering,
    uninstall_target,
)
from compare.deploy.code_pods import REMEDY
from compare.run.preflight import code_findings, unserved_left_out

pytestmark = pytest.mark.cluster

CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "own-apiservice"
KEPT = ["ClusterRoleBinding", "Deployment", "Service"]  # the chart but its APIService


def _target(folder: Path, arm: str, *, drop: bool) -> Path:
    spec = {"chart": {"path": str(CHART)}, "release": "metrics", "dropUnservedAPIServices": drop}
    data = {"apiVersion": "compare.example.com/v1alpha1", "kind": "Target", "name": "metrics"}
    path = folder / f"metrics-{arm}-{drop}.yaml"
    path.write_text(yaml.safe_dump({**data, arm: spec}))
    return path


def _api_services(api: client.ApiClient, namespace: str) -> list[str]:
    listed = client.ApiregistrationV1Api(api).list_api_service().items
    return [s.metadata.name for s in listed if namespace in s.metadata.name]


def test_the_switch_leaves_the_api_service_out_of_install_and_desired_state(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    plain = load_target(_target(tmp_path, "helm", drop=False))
    dropping = load_target(_target(tmp_path, "helm", drop=True))
    service = f"APIService v1beta1.metrics.{namespace}.metrics.example.com"
    # Said before anything is installed, one line, with the switch that stands in for it.
    assert code_findings(plain, ["helm"], namespace) == [
        f"preflight: {service}: its API is served by Service metrics, which selects the chart's"
        f" Deployment metrics: {REMEDY}, or dropUnservedAPIServices: true in the helm arm"
    ]
    assert code_findings(dropping, ["helm"], namespace) == [
        f"preflight: {service}: left out of the helm arm's install and desired state"
        " (dropUnservedAPIServices: its API group is not registered, so the cluster's discovery"
        " stays whole)"
    ]
    # What the chart renders without the switch: the APIService `_api_services` looks for.
    rendered = rendering(plain, plain.chart_arm("helm"), namespace)
    assert [o["metadata"]["name"] for o in rendered if o["kind"] == "APIService"] == [
        service.removeprefix("APIService ")
    ]
    install = dropping.chart_arm("helm")
    try:
        # Deployed, and the judge holds the release's desired state, which has no APIService.
        release, desired = deploy_target(cluster, dropping, install, namespace, timeout=60)
        assert sorted(item.kind for item in desired.items) == KEPT
        assert release.objects is not None
        assert sorted(o["kind"] for o in release.objects) == KEPT
        assert _api_services(api, namespace) == []
    finally:
        uninstall_target(cluster, install, namespace, timeout=60)


def test_flux_leaves_it_out_through_helm_controllers_post_renderer(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target = load_target(_target(tmp_path, "flux", drop=True))
    install = target.chart_arm("flux")
    try:
        desired = deploy_target_flux(cluster, target, install, namespace, timeout=90)
        assert sorted(item.kind for item in desired.items) == KEPT
        assert _api_services(api, namespace) == []
    finally:
        undeploy_target_flux(cluster, install, namespace, timeout=60)


def test_what_the_switch_leaves_out_is_no_render_time_change(tmp_path: Path) -> None:
    # The fixture's APIService renders an annotation at random: a change of the chart's own
    # rendering, none of what the arm installs.
    plain = load_target(_target(tmp_path, "helm", drop=False))
    dropping = load_target(_target(tmp_path, "helm", drop=True))
    assert render_changes(plain, plain.chart_arm("helm"), "cmp-render") == [
        "apiservice.metadata.annotations[metrics.example.com/serial]"
    ]
    assert render_changes(dropping, dropping.chart_arm("helm"), "cmp-render") == []


def test_an_arm_that_cannot_leave_it_out_is_left_out_of_the_run_in_seconds(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    path = _target(tmp_path, "helm", drop=True)
    data = yaml.safe_load(path.read_text())
    data["argocd"] = {"chart": {"path": str(CHART)}, "release": "metrics"}
    path.write_text(yaml.safe_dump(data))
    target = load_target(path)
    line = (
        "APIService v1beta1.metrics.cmp-x.metrics.example.com is served by the chart's own pods,"
        " never Available on the embedded cluster (it would break API discovery of its group"
        " for the whole cluster), and the argocd arm cannot leave it out (no post-render step):"
        " use values that disable it or a real cluster; dropUnservedAPIServices: true in the"
        " helm arm"
    )
    assert unserved_left_out(target, ["helm", "argocd"], "cmp-x") == {"argocd": line}
    assert unserved_left_out(target, ["helm"], "cmp-x") == {}  # it leaves it out
    # A run of that arm alone: one line naming it, before anything is installed.
    started = time.monotonic()
    common = ["--kubeconfig", str(cluster.kubeconfig), "-e", "pod-delete-one"]
    result = CliRunner().invoke(
        app, ["run", "--target", str(path), "-a", "argocd", *common, "--output", str(tmp_path)]
    )
    assert time.monotonic() - started < 30
    assert result.exit_code == 2, result.output
    assert "preflight of the argocd arm: APIService v1beta1.metrics." in result.stderr
