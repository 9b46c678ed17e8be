"""Classes of the second sweep that need more than a table row: an exec credential plugin that
never answers (killed at its deadline), a server that refuses the credentials (401) told from
an unreachable one, and a policy whose misspelt fault an `optional` must not forgive.

The "API server" here is a plain HTTP server on 127.0.0.1 answering like one: /version is
public, everything else 401 - as a cluster does for a token it does not accept."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import target as cluster_target
from tests.loopback_http import serving
from tests.results.helpers import fixture

runner = CliRunner()


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _kubeconfig(path: Path, server: str, user: Mapping[str, object]) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": user}],
            }
        )
    )
    return path


def test_an_exec_plugin_that_never_answers_is_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_target, "EXEC_PLUGIN_TIMEOUT_S", 1.0)
    marker = tmp_path / "pid"
    plugin = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": "sh",
            "args": ["-c", f"echo $$ > {marker}; exec sleep 100000"],
        }
    }
    kc = _kubeconfig(tmp_path / "kc", "https://127.0.0.1:1", plugin)
    started = time.monotonic()
    result = runner.invoke(app, ["status", "--kubeconfig", str(kc)])
    assert time.monotonic() - started < 10
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.stderr)
    assert f"kubeconfig {kc}: exec credential plugin 'sh' did not answer within 1 s" in line
    pid = int(marker.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text()


VERSION = {
    "major": "1",
    "minor": "34",
    "gitVersion": "v1.34.0",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2026-01-01T00:00:00Z",
    "goVersion": "go1.26",
    "compiler": "gc",
    "platform": "linux/amd64",
}


class _Refusing(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        if self.path.startswith("/version"):
            body = json.dumps(VERSION)
            self.send_response(200)
        else:
            body = json.dumps(
                {"kind": "Status", "status": "Failure", "reason": "Unauthorized", "code": 401}
            )
            self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    with serving(_Refusing) as url:
        yield url


def test_401_is_refused_credentials_not_unreachable(tmp_path: Path, refusing_server: str) -> None:
    kc = _kubeconfig(tmp_path / "kc", refusing_server, {"token": "not-accepted"})
    result = runner.invoke(app, ["status", "--kubeconfig", str(kc)])
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.stderr)
    assert f"refused the credentials of kubeconfig {kc} (401 Unauthorized)" in line
    assert "unreachable" not in line


def test_an_unreachable_server_is_still_unreachable(tmp_path: Path) -> None:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    kc = _kubeconfig(tmp_path / "kc", f"http://127.0.0.1:{port}", {"token": "x"})
    result = runner.invoke(app, ["status", "--kubeconfig", str(kc)])
    assert result.exit_code == 2, result.output
    (line,) = _lines(result.stderr)
    assert "is unreachable" in line


def test_a_misspelt_optional_fault_breaks_the_policy(tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(
        "version: 1\nexpectations:\n"
        "  - {approach: helm, faults: [pod-delet-one], expect: heals, optional: true}\n"
        # A built-in experiment this run did not include stays forgiven by `optional`.
        "  - {approach: helm, faults: [secret-delete], expect: heals, optional: true}\n"
    )
    result = runner.invoke(app, ["check", str(fixture("single-trial")), "--policy", str(policy)])
    assert result.exit_code == 1, result.output
    fails = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert len(fails) == 1, result.stdout
    assert "'pod-delet-one' is neither a built-in experiment nor in this run" in fails[0]


def test_a_helm_call_that_never_returns_is_stopped() -> None:
    from compare.deploy.charts import _run
    from compare.errors import CompareError

    started = time.monotonic()
    with pytest.raises(CompareError, match=r"helm did not finish within 0\.2 s"):
        _run(asyncio.sleep(100), timeout=0.2)
    assert time.monotonic() - started < 5


def test_an_empty_webapp_name_never_reaches_a_delete(tmp_path: Path) -> None:
    from compare.approaches.operator import builtin
    from compare.approaches.operator.arm import remove_resources
    from compare.cluster import ClusterTarget
    from compare.errors import CompareError
    from compare.target.builtin import webapp_named

    # No cluster behind it: the refusal comes before any API call (a DELETE without a name
    # addresses the whole collection).
    nowhere = ClusterTarget(tmp_path / "no-kubeconfig")
    for name, namespace in (("", "shop"), ("shop", "")):
        target = builtin(webapp_named(name))
        with pytest.raises(CompareError, match="empty name or namespace; nothing deleted"):
            remove_resources(nowhere, target, target.operator_arm("operator"), namespace, timeout=5)
