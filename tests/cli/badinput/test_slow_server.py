"""An API server that answers a byte a second hangs no command: `status`, `deploy` and `run`
end with exit 2 and one line naming the server within the reachability check's deadline
(`compare.cluster.target.REACH_TIMEOUT_S`), as every later request ends within its own
(`compare.kube.deadline`, tested in tests/kube/test_deadline.py)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster.target import REACH_TIMEOUT_S
from tests.kube.test_deadline import kubeconfig, tarpit

runner = CliRunner()
__all__ = ["tarpit"]  # the fixture, shared with the client's own tests

# Above the deadline: the CLI's start (imports, the kubeconfig) on a loaded machine.
SLACK_S = 15.0


@pytest.mark.parametrize(
    "args",
    [
        ["status"],
        ["status", "-A"],
        ["deploy", "helm", "-n", "slow"],
        ["run", "-e", "pod-delete-one", "-a", "helm", "-o", "{tmp}/out"],
    ],
    ids=["status", "status-A", "deploy", "run"],
)
def test_a_server_answering_a_byte_a_second_is_cut(
    tmp_path: Path, tarpit: str, args: list[str]
) -> None:
    kc = kubeconfig(tmp_path / "kc", tarpit)
    started = time.monotonic()
    filled = [a.replace("{tmp}", str(tmp_path)) for a in args]
    result = runner.invoke(app, [*filled, "--kubeconfig", str(kc)])
    assert time.monotonic() - started < REACH_TIMEOUT_S + SLACK_S
    assert result.exit_code == 2, result.output
    (line,) = [x for x in result.stderr.splitlines() if x.strip()]
    assert f"the API server at {tarpit} sent no complete answer within 5 s" in line
    assert f"(kubeconfig {kc})" in line
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
