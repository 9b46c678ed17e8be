"""`compare deploy operator` and `compare undeploy operator` through the real CLI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from compare.approaches.operator.controllers import OperatorHandle, operator_status
from compare.cli import app
from compare.cluster import ClusterTarget

from .helpers import get_deployment, get_webapp

pytestmark = pytest.mark.cluster

runner = CliRunner()


@pytest.fixture
def cli_args(cluster: ClusterTarget, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The embedded test cluster is reached as the default cluster (by name), any other one
    with --kubeconfig: either way the CLI finds the operator the tests started."""
    if cluster.embedded:
        monkeypatch.setenv("COMPARE_CLUSTER_NAME", cluster.kubeconfig.parent.name)
        return []
    return ["--kubeconfig", str(cluster.kubeconfig)]


def _app_file(tmp_path: Path, **spec: Any) -> Path:
    body = {
        "apiVersion": "example.com/v1",
        "kind": "WebApp",
        "metadata": {"name": "shop"},
        "spec": {"replicas": 2, "image": "shop:v1", **spec},
    }
    path = tmp_path / "shop.yaml"
    path.write_text(yaml.safe_dump(body))
    return path


@pytest.mark.usefixtures("restore_operator")
def test_deploy_then_undeploy(
    cli_args: list[str],
    cluster: ClusterTarget,
    api: Any,
    namespace: str,
    operator: OperatorHandle,
    tmp_path: Path,
) -> None:
    app_file = _app_file(tmp_path)
    deployed = runner.invoke(
        app, [*cli_args, "deploy", "operator", "--app", str(app_file), "--namespace", namespace]
    )
    assert deployed.exit_code == 0, deployed.output
    assert "operator installed" in deployed.output
    assert (
        f"WebApp shop (replicas 2, image shop:v1) in namespace {namespace}: Available"
    ) in deployed.output
    body = get_webapp(api, namespace, "shop")
    assert body is not None and body["status"]["phase"] == "Running"
    assert (get_deployment(api, namespace, "shop") or {})["spec"]["replicas"] == 2

    removed = runner.invoke(
        app,
        [
            *(*cli_args, "undeploy", "operator", "--namespace", namespace, "--name", "shop"),
            "--stop-operator",  # whatever WebApps other tests left elsewhere
        ],
    )
    assert removed.exit_code == 0, removed.output
    assert f"WebApp shop removed from namespace {namespace}" in removed.output
    assert "operator stopped" in removed.output
    assert get_webapp(api, namespace, "shop") is None
    status = operator_status(cluster)
    assert status is not None and not status.running


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--app", "/nonexistent/app.yaml"], "/nonexistent/app.yaml: no such file"),
        (["--namespace", "Bad_NS"], "namespace 'Bad_NS': must be a DNS label"),
    ],
)
def test_bad_input_is_one_line(
    cli_args: list[str], operator: OperatorHandle, args: list[str], message: str
) -> None:
    result = runner.invoke(app, [*cli_args, "deploy", "operator", *args])
    assert result.exit_code == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and message in lines[0]
    assert "Traceback" not in result.output


def test_invalid_webapp_file_names_the_field(
    cli_args: list[str], operator: OperatorHandle, tmp_path: Path
) -> None:
    result = runner.invoke(
        app, [*cli_args, "deploy", "operator", "--app", str(_app_file(tmp_path, port=0))]
    )
    assert result.exit_code == 2
    assert "shop.yaml: spec.port: Input should be greater than or equal to 1" in result.stderr
