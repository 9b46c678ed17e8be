"""A chart that renders a new value each time (compare.run.preflight.render_findings): the
fields two renderings differ in, what each approach makes of them, results.json and the report.

The chart is tests/fixtures/charts/random-secret (a Secret with `randAlphaNum`); the run test
is a preflight that leaves the argocd arm out in seconds and runs the helm arm.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from compare import approaches as registry
from compare.approaches import load_target
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import rendering_changes
from compare.results import PreflightFinding, latest_run, load_results
from compare.run.preflight import render_findings

runner = CliRunner()
CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "random-secret"
FINDING = (
    "Argo CD rewrites secret.data.admin-password on every sync"
    " (the chart renders a new value each time)"
)


def _secret(value: str, name: str = "app-admin") -> dict[str, Any]:
    return {"kind": "Secret", "metadata": {"name": name}, "data": {"admin-password": value}}


def _deployment(annotation: str) -> dict[str, Any]:
    template = {"metadata": {"annotations": {"checksum/secret": annotation}}}
    return {"kind": "Deployment", "metadata": {"name": "app"}, "spec": {"template": template}}


def test_the_fields_two_renderings_differ_in_are_named_as_the_judge_names_them() -> None:
    first = [_secret("YWFh"), _deployment("1"), {"kind": "ConfigMap", "metadata": {"name": "c"}}]
    second = [_secret("YmJi"), _deployment("2"), {"kind": "ConfigMap", "metadata": {"name": "c"}}]
    assert rendering_changes(first, second) == [
        "secret.data.admin-password",
        "deployment.spec.template.metadata.annotations[checksum/secret]",
    ]
    assert rendering_changes(first, first) == []


def test_an_object_one_rendering_has_is_named_whole() -> None:
    # A generated name (`{{ randAlphaNum 5 }}` in metadata.name): each rendering has its own.
    first = [_secret("YWFh", "app-x1"), _secret("YWFh", "keep")]
    second = [_secret("YWFh", "app-y2"), _secret("YWFh", "keep")]
    assert rendering_changes(first, second) == ["secret/app-x1", "secret app-y2"]


def test_a_secret_value_is_never_in_the_finding() -> None:
    found = rendering_changes([_secret("c2VjcmV0LW9uZQ==")], [_secret("c2VjcmV0LXR3bw==")])
    assert found == ["secret.data.admin-password"]
    assert not any("c2VjcmV0" in path or "secret-" in path for path in found)


def test_argocd_rewrites_what_its_repo_server_renders_helm_and_flux_hold_their_install() -> None:
    assert registry.get("argocd").render_finding(["secret.data.admin-password"]) == FINDING
    many = registry.get("argocd").render_finding([f"secret.data.k{i}" for i in range(5)])
    assert many is not None and "secret.data.k2 and 2 more on every sync" in many
    assert registry.get("argocd").render_finding([]) is None
    for name in ("helm", "flux"):
        assert registry.get(name).render_finding(["secret.data.admin-password"]) is None


def _target(folder: Path) -> Path:
    arm = {"chart": {"path": str(CHART)}, "release": "rnd"}
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "random-secret",
        "helm": arm,
        "flux": arm,
        "argocd": arm,
    }
    path = folder / "random-secret.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.cluster
def test_two_renders_of_a_random_password_leave_argocd_out_and_keep_helm_and_flux(
    tmp_path: Path,
) -> None:
    target = load_target(_target(tmp_path))
    found = render_findings(target, ["helm", "flux", "argocd"], "cmp-render")
    assert found.left_out == {"argocd": FINDING}
    assert found.notes == [
        "preflight: the chart renders secret.data.admin-password anew each time; the helm and"
        " flux arms hold what they installed (the release's manifest), never a new rendering"
    ]


@pytest.mark.cluster
def test_the_argocd_arm_is_a_finding_in_seconds_and_the_helm_arm_runs(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    target = _target(tmp_path)
    common = ["--kubeconfig", str(cluster.kubeconfig), "-e", "pod-delete-one"]
    # Alone, the argocd arm leaves nothing to run: the run stops in its preflight, in seconds
    # (it timed out after 117 s waiting for a Secret Argo CD rendered anew).
    alone = tmp_path / "alone"
    started = time.monotonic()
    result = runner.invoke(
        app, ["run", "--target", str(target), "-a", "argocd", *common, "--output", str(alone)]
    )
    assert time.monotonic() - started < 30
    assert result.exit_code == 2, result.output
    assert f"preflight of the argocd arm: {FINDING}" in result.stderr
    stopped = load_results(latest_run(alone))
    assert (
        stopped.trials == []
        and stopped.preflight_error == f"preflight of the argocd arm: {FINDING}"
    )
    # With the helm arm, the run goes on with it; results.json keeps the finding.
    out = tmp_path / "both"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(target), "-a", "helm", "-a", "argocd", *common),
            *("--heal-window", "15", "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    said = result.output
    left_out = said.index(f"preflight of the argocd arm: {FINDING} (left out of this run)")
    assert left_out < said.index("preflight: the helm arm reached its desired state")
    results = load_results(latest_run(out))
    assert results.settings.approaches == ["helm"]
    assert results.preflight_findings == [PreflightFinding(approach="argocd", finding=FINDING)]
    assert [(t.approach, t.status) for t in results.trials] == [("helm", "healed")]
