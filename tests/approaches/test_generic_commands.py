"""Every approach gets `compare deploy NAME` and `compare undeploy NAME`
(`compare.cli.deploy_cmd`) from its interface alone, its own options included: shown with
approaches made in this test (plain Helm under another name, on the real cluster; one that
declares an option of its own)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
import typer
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import CommandOption, desired_objects, registered
from compare.approaches.helm import Helm, HelmCommands
from compare.cli.common import ErrorBoundaryGroup
from compare.cli.deploy_cmd import attach
from compare.cluster import ClusterTarget
from compare.errors import CompareError
from compare.judge import problems, read
from compare.target.builtin import BUILTIN_CHART
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


SHADES = CommandOption("shade", ("--shade",), str, help="A colour.")


class ShadedCommands(HelmCommands):
    """Commands with an option of their own, which they refuse before anything is read."""

    deploy_options: ClassVar[tuple[CommandOption, ...]] = (SHADES,)

    def check_options(self, options: Mapping[str, Any]) -> None:
        if options["shade"] == "mauve":
            raise CompareError("--shade 'mauve': not a shade this approach knows")


@dataclass(frozen=True)
class ShadedHelm(OtherHelm):
    """An approach whose commands take an option of their own."""

    name = "shaded"  # type: ignore[misc]
    commands = ShadedCommands()


def _app() -> typer.Typer:
    root = typer.Typer(cls=ErrorBoundaryGroup)
    deploy = typer.Typer(cls=ErrorBoundaryGroup)
    undeploy = typer.Typer(cls=ErrorBoundaryGroup)
    attach(OtherHelm(), deploy, undeploy)
    attach(ShadedHelm(), deploy, undeploy)
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
    # Registered while it runs, as any approach is: the built-in target has an arm of each.
    with registered(OtherHelm()) as approach:
        _round_trip(runner, app, approach, cluster, api, namespace, app_file, kube)


def _round_trip(
    runner: CliRunner,
    app: typer.Typer,
    approach: OtherHelm,
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    app_file: Path,
    kube: list[str],
) -> None:
    result = runner.invoke(
        app, ["deploy", "other-helm", "--app", str(app_file), "-n", namespace, *kube]
    )
    assert result.exit_code == 0, result.output
    # The arm's headline and notes, as for a target file, with what the WebApp runs.
    assert (
        f"helm release shop (revision 1, chart {BUILTIN_CHART}, version 0.1.0) in namespace"
        f" {namespace}: desired state holds after"
    ) in result.output
    assert "  Deployment shop: 1/1 ready, shop:v1" in result.output
    desired = desired_objects(api, approach.name, load_webapp(app_file), namespace)
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


def test_an_approach_s_own_options_are_flags_of_its_commands(tmp_path: Path) -> None:
    runner = CliRunner()
    refused = runner.invoke(_app(), ["deploy", "shaded", "--shade", "mauve"])
    assert refused.exit_code == 2, refused.output
    assert refused.output.strip() == "error: --shade 'mauve': not a shade this approach knows"
    # Not declared with_target: a usage error beside --target, before the file is read.
    beside = runner.invoke(
        _app(), ["deploy", "shaded", "--shade", "teal", "--target", str(tmp_path / "none.yaml")]
    )
    assert beside.exit_code == 2, beside.output
    assert "--target and --shade are mutually exclusive" in beside.output
    # Another approach's option is not this one's; its inherited ones are.
    other = runner.invoke(_app(), ["deploy", "other-helm", "--shade", "teal"])
    assert other.exit_code == 2 and "No such option: --shade" in other.output
    release = runner.invoke(_app(), ["deploy", "other-helm", "--release", "Bad_Name"])
    assert release.exit_code == 2
    assert "release 'Bad_Name': must be a lower-case DNS name" in release.output
