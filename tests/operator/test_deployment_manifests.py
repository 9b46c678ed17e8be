"""What a real cluster gets: the operator's Helm chart and operator/config (kustomize).

Rendered by the real helm and kubectl binaries, checked against the generated RBAC and
webhooks, their container args parsed by the operator's own CLI, and (on the test cluster)
validated by the API server with a server-side dry run.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from compare.cluster import ClusterTarget, tool_path
from compare.paths import CHARTS_DIR, OPERATOR_DIR
from webapp_operator import rbac
from webapp_operator.admission import webhook_configuration
from webapp_operator.config import parse_args

CHART = CHARTS_DIR / "webapp-operator"


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def _render(*extra: str, namespace: str = "ops") -> list[dict[str, Any]]:
    result = _run(tool_path("helm"), "template", "op", str(CHART), "-n", namespace, *extra)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _kustomize() -> list[dict[str, Any]]:
    result = _run(tool_path("kubectl"), "kustomize", str(OPERATOR_DIR / "config" / "default"))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _by(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def _args(deployment: dict[str, Any], tmp_path: Path) -> list[str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    # The mounted certificate directory exists only in the pod.
    certs = tmp_path / "certs"
    certs.mkdir(exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        (certs / name).write_text("x")
    return [
        f"--webhook-cert-dir={certs}" if a.startswith("--webhook-cert-dir") else a for a in args
    ]


def test_chart_lints_strict() -> None:
    result = _run(tool_path("helm"), "lint", "--strict", str(CHART))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize(
    "bad",
    ["webhook.failurePolicy=Maybe", "manager.replicas=0", "unknownKey=1", "logLevel=LOUD"],
)
def test_chart_schema_rejects_bad_values(bad: str) -> None:
    result = _run(tool_path("helm"), "lint", "--strict", str(CHART), "--set", bad)
    assert result.returncode != 0
    assert "values don't meet the specifications of the schema" in result.stdout + result.stderr


def test_chart_renders_the_generated_rbac_and_webhooks(tmp_path: Path) -> None:
    objects = _render()
    (role,) = _by(objects, "ClusterRole")
    assert role["rules"] == rbac.rules_json(rbac.CLUSTER_RULES)
    (namespaced,) = _by(objects, "Role")
    assert namespaced["rules"] == rbac.rules_json(rbac.NAMESPACE_RULES)
    (binding,) = _by(objects, "ClusterRoleBinding")
    assert binding["subjects"][0]["namespace"] == "ops"

    (config,) = _by(objects, "ValidatingWebhookConfiguration")
    generated = webhook_configuration(b"", url="https://x")["webhooks"]
    for rendered, expected in zip(config["webhooks"], generated, strict=True):
        strip = {"clientConfig"}
        assert {k: v for k, v in rendered.items() if k not in strip} == {
            k: v for k, v in expected.items() if k not in strip
        }
        assert rendered["clientConfig"]["service"] == {
            "name": "op-webapp-operator-webhook",
            "namespace": "ops",
            "path": expected["clientConfig"]["url"].removeprefix("https://x"),
            "port": 443,
        }
    (secret,) = _by(objects, "Secret")
    assert secret["data"]["ca.crt"] == config["webhooks"][0]["clientConfig"]["caBundle"]


def test_chart_deployments_run_valid_operator_commands(tmp_path: Path) -> None:
    objects = _render("--set", "watchNamespaces={a,b}")
    manager, webhook = sorted(_by(objects, "Deployment"), key=lambda d: d["metadata"]["name"])
    assert manager["spec"]["replicas"] == 2 and webhook["spec"]["replicas"] == 2
    leader = parse_args(_args(manager, tmp_path))
    assert leader.lease is not None and leader.lease.duration == 15
    assert leader.namespaces == ("a", "b") and leader.webhook is None
    assert leader.operator_namespace == "ops"
    server = parse_args(_args(webhook, tmp_path))
    assert server.webhook_only and server.lease is None and server.webhook is not None
    assert server.webhook.port == 9443


def test_kustomize_config_is_complete_and_valid_for_the_operator(tmp_path: Path) -> None:
    objects = _kustomize()
    kinds = sorted(obj["kind"] for obj in objects)
    assert kinds == sorted(
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "Deployment",
            "Deployment",
            "Namespace",
            "Role",
            "RoleBinding",
            "Service",
            "ServiceAccount",
            "ValidatingWebhookConfiguration",
        ]
    )
    deployments = {d["metadata"]["name"]: d for d in _by(objects, "Deployment")}
    assert deployments["webapp-operator"]["spec"]["replicas"] == 2
    manager = parse_args(_args(deployments["webapp-operator"], tmp_path))
    assert manager.lease is not None and manager.webhook is None
    server = parse_args(_args(deployments["webapp-operator-webhook"], tmp_path))
    assert server.webhook_only


@pytest.mark.cluster
def test_rendered_objects_pass_a_server_side_dry_run(
    cluster: ClusterTarget, namespace: str
) -> None:
    docs = _render(namespace=namespace)
    result = _run(
        tool_path("kubectl"),
        *cluster.kubectl_args(),
        "apply",
        "--dry-run=server",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=yaml.safe_dump_all(docs),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("(server dry run)") == len(docs)
