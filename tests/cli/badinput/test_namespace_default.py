"""`-n` is optional: without it a deploy or undeploy uses the file's metadata.namespace (else
the default); only a `-n` naming another namespace contradicts the file."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from compare.cli import app
from tests.cli.badinput.cases import VALID_APP

runner = CliRunner()
NO_CLUSTER = ["--kubeconfig", "/nonexistent/kubeconfig"]
COMMANDS = [
    ["deploy", "helm"],
    ["deploy", "operator"],
    ["deploy", "flux"],
    ["undeploy", "helm"],
    ["undeploy", "operator"],
    ["undeploy", "flux"],
]


def _app_in(tmp_path: Path, namespace: str) -> str:
    doc = {**VALID_APP, "metadata": {**VALID_APP["metadata"], "namespace": namespace}}
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_the_files_namespace_is_used_without_n(tmp_path: Path, command: list[str]) -> None:
    result = runner.invoke(app, [*command, "--app", _app_in(tmp_path, "shop"), *NO_CLUSTER])
    # Every input was accepted: it got as far as the cluster, which is not there.
    assert result.exit_code == 2
    assert result.output.strip() == "error: kubeconfig /nonexistent/kubeconfig: no such file"


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_n_naming_another_namespace_contradicts_the_file(
    tmp_path: Path, command: list[str]
) -> None:
    path = _app_in(tmp_path, "shop")
    result = runner.invoke(app, [*command, "--app", path, "-n", "other", *NO_CLUSTER])
    assert result.exit_code == 2
    assert result.output.strip() == (
        f"error: {path}: metadata.namespace 'shop' conflicts with -n 'other' (drop one of them)"
    )
