"""`compare cluster ...` and the global --kubeconfig handling, through the real CLI."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from typer.testing import CliRunner

from compare.approaches.operator.controllers import install_operator
from compare.cli import app
from compare.cluster import ClusterTarget, EmbeddedCluster, tool_path
from compare.cluster.embedded import MAX_NODES, control_plane_args
from compare.errors import CompareError
from compare.paths import TOOLS_DIR
from tests.conftest import TEST_CLUSTER

runner = CliRunner()


def _pids(cluster: EmbeddedCluster) -> set[int]:
    return {int(p.read_text()) for p in (cluster.cluster_dir / "pids").glob("*.pid")}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie left for its (gone) parent is not running; /proc tells.
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def _node_names(cluster: EmbeddedCluster) -> list[str]:
    out = subprocess.run(
        [
            tool_path("kubectl"),
            "--kubeconfig",
            str(cluster.kubeconfig),
            "get",
            "nodes",
            "-o",
            "name",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return out.split()


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _listeners(port: int) -> set[int]:
    """Pids listening on the port. Another cluster may reuse a freed port at once, so the
    check is "none of ours listens", not "nobody listens"."""
    out = subprocess.run(
        ["ss", "-Hltnp", f"sport = :{port}"], capture_output=True, text=True, check=True
    ).stdout
    return {int(pid) for pid in re.findall(r"pid=(\d+)", out)}


@pytest.mark.cluster
def test_up_twice_is_idempotent(cluster: ClusterTarget) -> None:
    if not cluster.embedded:
        pytest.skip("runs only against the embedded cluster (KUBECONFIG was given)")
    embedded = EmbeddedCluster(TEST_CLUSTER)
    before = _pids(embedded)
    result = runner.invoke(app, ["cluster", "up", "--name", TEST_CLUSTER])
    assert result.exit_code == 0, result.output
    assert "already running" in result.output
    assert str(embedded.kubeconfig) in result.output
    assert _pids(embedded) == before


@pytest.mark.cluster
def test_up_then_down_leaves_no_process_and_no_port() -> None:
    name = f"{TEST_CLUSTER}-lifecycle"  # helpers running in parallel pick their own names
    cluster = EmbeddedCluster(name)
    qps = "kube-controller-manager:kube-api-qps=123"
    result = runner.invoke(app, ["cluster", "up", "--name", name, "--nodes", "1", "--arg", qps])
    assert result.exit_code == 0, result.output
    assert len(_node_names(cluster)) == 1
    # The override reached the running kube-controller-manager; the tuning's other flags too.
    kcm = cluster.component_pid("kube-controller-manager")
    assert kcm is not None
    argv = Path(f"/proc/{kcm}/cmdline").read_bytes().decode().split("\0")
    assert [a for a in argv if a.startswith("--kube-api-qps=")][-1] == "--kube-api-qps=123"
    environ = Path(f"/proc/{kcm}/environ").read_bytes().decode().split("\0")
    tuned = control_plane_args(overrides=[])
    for arg in tuned:
        if arg.component == "kube-controller-manager" and arg.flag != "kube-api-qps":
            if arg.env is None:
                assert f"--{arg.flag}={arg.value}" in argv
            else:
                assert f"{arg.env}={arg.value}" in environ
    # --nodes on a running cluster scales its kwok nodes and keeps its processes.
    before = _pids(cluster)
    result = runner.invoke(app, ["cluster", "up", "--name", name, "--nodes", "3"])
    assert result.exit_code == 0 and "already running" in result.output, result.output
    assert len(_node_names(cluster)) == 3 and _pids(cluster) == before
    status = runner.invoke(app, ["cluster", "status", "--name", name])
    assert "running" in status.output and "kube-apiserver" in status.output
    pids = _pids(cluster)
    server = yaml.safe_load(cluster.kubeconfig.read_text())["clusters"][0]["cluster"]["server"]
    port = urlparse(server).port
    assert port and _port_open(port) and _listeners(port) & pids
    # The local operator belongs to the cluster: `down` stops it and drops its credentials.
    operator = install_operator(ClusterTarget(cluster.kubeconfig, None, embedded=True))
    assert operator.pid is not None and _alive(operator.pid)
    pids.add(operator.pid)

    result = runner.invoke(app, ["cluster", "down", "--name", name])
    assert result.exit_code == 0, result.output
    assert not cluster.cluster_dir.exists()
    assert not operator.state_dir.exists()
    assert not [pid for pid in pids if _alive(pid)]
    assert not _listeners(port) & pids
    again = runner.invoke(app, ["cluster", "down", "--name", name])
    assert again.exit_code == 0 and "no embedded cluster" in again.output


def test_kubeconfig_prints_the_path() -> None:
    result = runner.invoke(app, ["cluster", "kubeconfig", "--name", "x"])
    assert result.exit_code == 0
    assert result.output.strip().endswith("/kwok/clusters/x/kubeconfig.yaml")


def test_port_in_use_is_reported_in_one_line() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        port = sock.getsockname()[1]
        result = runner.invoke(
            app, ["cluster", "up", "--name", "compare-port", "--port", str(port)]
        )
    assert result.exit_code == 2
    assert f"port {port} on 127.0.0.1 is in use" in result.output
    assert "Traceback" not in result.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (None, "no such file"),
        (": : not yaml [", "not valid YAML"),
        ("apiVersion: v1\nkind: Config\n", "no clusters defined"),
    ],
)
def test_bad_kubeconfig_is_one_line_error(
    tmp_path: Path, content: str | None, expected: str
) -> None:
    path = tmp_path / "kubeconfig"
    if content is not None:
        path.write_text(content)
    result = runner.invoke(app, ["--kubeconfig", str(path), "cluster", "info"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0] and str(path) in lines[0]


def test_unreachable_cluster_is_one_line_error(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again below: nothing listens there
    path = tmp_path / "kubeconfig"
    path.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{port}"}}],
                "users": [{"name": "u", "user": {"token": "x"}}],
                "contexts": [{"name": "ctx", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "ctx",
            }
        )
    )
    result = runner.invoke(app, ["--kubeconfig", str(path), "cluster", "info"])
    assert result.exit_code == 2, result.output
    assert "unreachable" in result.output and f"127.0.0.1:{port}" in result.output
    bad_ctx = runner.invoke(
        app, ["--kubeconfig", str(path), "--context", "nope", "cluster", "info"]
    )
    assert bad_ctx.exit_code == 2 and "no context 'nope'" in bad_ctx.output


def test_stale_cluster_directory_is_reported_and_down_clears_it() -> None:
    name = "compare-stale"
    cluster = EmbeddedCluster(name)
    cluster.cluster_dir.mkdir(parents=True, exist_ok=True)  # a directory kwokctl cannot use
    result = runner.invoke(app, ["cluster", "up", "--name", name])
    assert result.exit_code == 2
    assert "stale embedded cluster directory" in result.output
    assert f"compare cluster down --name {name}" in result.output
    assert runner.invoke(app, ["cluster", "down", "--name", name]).exit_code == 0
    assert not cluster.cluster_dir.exists()


def test_build_without_go_names_the_missing_toolchain(tmp_path: Path) -> None:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "COMPARE_CACHE_DIR": str(tmp_path)}
    result = subprocess.run(
        ["bash", str(TOOLS_DIR / "build.sh")], env=env, capture_output=True, text=True
    )
    assert result.returncode == 1
    assert "no Go toolchain on PATH" in result.stderr
    assert not (tmp_path / "bin").exists()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["cluster", "up", "--bogus"], "No such option: --bogus"),
        (["cluster", "up", "--nodes", "0"], "Invalid value for '--nodes'"),
        (["cluster", "up", "--nodes", str(MAX_NODES + 1)], "Invalid value for '--nodes'"),
        (["cluster", "up", "--nodes", "many"], "Invalid value for '--nodes'"),
        (["no-such-command"], "No such command 'no-such-command'"),
    ],
)
def test_usage_errors_are_one_line(args: list[str], expected: str) -> None:
    result = runner.invoke(app, args)
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0] and lines[0].startswith("error:")


@pytest.mark.cluster
def test_up_restarts_a_cluster_whose_processes_died() -> None:
    name = "compare-crashed"
    cluster = EmbeddedCluster(name)
    assert runner.invoke(app, ["cluster", "up", "--name", name, "--nodes", "1"]).exit_code == 0
    try:
        pids = _pids(cluster)
        for pid in pids:
            os.kill(pid, signal.SIGKILL)  # as after a reboot or an OOM kill
        # Wait until they are reaped, not just dead: kwokctl's own liveness check (signal 0)
        # still counts a zombie as running, as a reboot never leaves one.
        deadline = time.monotonic() + 30
        while any(_exists(pid) for pid in pids):
            assert time.monotonic() < deadline, "killed components were not reaped"
            time.sleep(0.05)
        assert not cluster.status().running
        result = runner.invoke(app, ["cluster", "up", "--name", name])
        assert result.exit_code == 0, result.output
        assert cluster.status().running
        assert f"compare cluster down --name {name}" in result.output
    finally:
        runner.invoke(app, ["cluster", "down", "--name", name])


@pytest.mark.parametrize("nodes", [0, -1, MAX_NODES + 1])
def test_node_count_is_checked_before_anything_starts(nodes: int) -> None:
    cluster = EmbeddedCluster("compare-nodes-check")
    with pytest.raises(CompareError) as error:
        cluster.up(nodes=nodes)
    assert str(error.value) == f"--nodes must be between 1 and {MAX_NODES}, got {nodes}"
    assert not cluster.cluster_dir.exists()
