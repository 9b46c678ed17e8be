"""An approach with no command module of its own still gets `compare deploy NAME` and
`compare undeploy NAME` (`compare.cli.deploy_cmd`), through its interface alone: shown
with a fourth approach made in this test (plain Helm under another name), on the real cluster."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches.helm import Helm
from compare.cli.common import ErrorBoundaryGroup
from compare.cli.deploy_cmd import attach
from compare.cluster import ClusterTarget
from compare.judge import problems, read
from compare.webapp import load_webapp

APP = """\
apiVersion: example.com/v1
kind: WebApp
metadata:
  name: shop
spec:
  replicas: 1
  image: shop:v1
  port: 8080
"""


@dataclass(frozen=True)
class OtherHelm(Helm):
    name = "other-helm"  # type: ignore[misc]
    short = "oh"  # type: ignore[misc]
    label = "other helm releases"  # type: ignore[misc]


def _app() -> typer.Typer:
    root = typer.Typer(cls=ErrorBoundaryGroup)
    deploy = typer.Typer(cls=ErrorBoundaryGroup)
    undeploy = typer.Typer(cls=ErrorBoundaryGroup)
    attach(OtherHelm(), deploy, undeploy)
    root.add_typer(deploy, name="deploy")
    root.add_typer(undeploy, name="undeploy")
    return root


@pytest.mark.cluster
def test_deploy_and_undeploy_through_the_interface_alone(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    app_file = tmp_path / "shop.yaml"
    app_file.write_text(APP)
    kube = ["--kubeconfig", str(cluster.kubeconfig)]
    runner = CliRunner()
    app = _app()
    approach = OtherHelm()

    result = runner.invoke(
        app, ["deploy", "other-helm", "--app", str(app_file), "-n", namespace, *kube]
    )
    assert result.exit_code == 0, result.output
    assert f"other-helm: shop in namespace {namespace}: desired state holds" in result.output
    desired = approach.desired_objects(api, load_webapp(app_file), namespace)
    assert problems(desired, read(api, namespace, desired.kinds)) == []

    result = runner.invoke(
        app, ["undeploy", "other-helm", "--app", str(app_file), "-n", namespace, *kube]
    )
    assert result.exit_code == 0, result.output
    assert approach.status(cluster, api, namespace) == []


def test_a_bad_app_file_is_one_line_and_touches_no_cluster(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: WebApp\nspec: {replicas: -1}\n")
    result = CliRunner().invoke(_app(), ["deploy", "other-helm", "--app", str(bad)])
    assert result.exit_code == 2, result.output
    assert str(bad) in result.output and "Traceback" not in result.output
