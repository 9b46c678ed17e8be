"""The embedded cluster: a real control plane run by `kwokctl --runtime binary` on loopback.

etcd, kube-apiserver (RBAC + admission), kube-controller-manager, kube-scheduler and the kwok
controller run as local processes built from Go modules; kwok nodes accept pods and mark them
Running/Ready without containers. kwokctl keeps its state under <cache>/kwok, never in ~/.kube.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from compare.cluster.binaries import ensure_binaries, tool_path
from compare.errors import CompareError
from compare.paths import bin_dir, cache_dir

DEFAULT_NAME = "compare"
DEFAULT_NODES = 2
KWOKCTL_CONFIG = """\
apiVersion: config.kwok.x-k8s.io/v1alpha1
kind: KwokctlConfiguration
options:
  bindAddress: 127.0.0.1
"""


def default_name() -> str:
    return os.environ.get("COMPARE_CLUSTER_NAME", DEFAULT_NAME)


@dataclass(frozen=True)
class ClusterStatus:
    name: str
    exists: bool
    running: bool
    kubeconfig: Path
    workdir: Path
    processes: tuple[str, ...] = ()

    def describe(self) -> str:
        if not self.exists:
            return f"embedded cluster {self.name!r}: not created"
        state = "running" if self.running else "stopped (stale)"
        procs = ", ".join(self.processes) or "none"
        return (
            f"embedded cluster {self.name!r}: {state}\n"
            f"  kubeconfig: {self.kubeconfig}\n"
            f"  processes:  {procs}"
        )


class EmbeddedCluster:
    """One named kwokctl cluster whose state lives in the toolkit's cache directory."""

    def __init__(self, name: str | None = None) -> None:
        self.name = name or default_name()
        self.workdir = cache_dir() / "kwok"
        self.cluster_dir = self.workdir / "clusters" / self.name
        self.kubeconfig = self.cluster_dir / "kubeconfig.yaml"

    # -- queries ---------------------------------------------------------------------------

    def status(self) -> ClusterStatus:
        exists = self.cluster_dir.is_dir()
        procs = self._live_processes() if exists else ()
        running = exists and self.kubeconfig.exists() and self._api_ready()
        return ClusterStatus(self.name, exists, running, self.kubeconfig, self.workdir, procs)

    def _live_processes(self) -> tuple[str, ...]:
        """Component names whose pid file points at a live process."""
        alive = []
        for pid_file in sorted((self.cluster_dir / "pids").glob("*.pid")):
            try:
                pid = int(pid_file.read_text().strip())
            except (OSError, ValueError):
                continue
            if _alive(pid):
                alive.append(f"{pid_file.stem}[{pid}]")
        return tuple(alive)

    def _wait_ready(self, *, timeout: float) -> bool:
        """kwokctl start returns once the processes are launched, not when they serve."""
        deadline = time.monotonic() + timeout
        while not self._api_ready():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.2)
        return True

    def _api_ready(self) -> bool:
        result = self._kubectl("get", "--raw", "/readyz", timeout=10, check=False)
        return result.returncode == 0 and result.stdout.strip() == "ok"

    # -- lifecycle ---------------------------------------------------------------------------

    def up(self, *, nodes: int = DEFAULT_NODES, port: int | None = None) -> ClusterStatus:
        """Start the cluster, or report the running one (idempotent)."""
        ensure_binaries()
        current = self.status()
        if current.running:
            return current
        if current.exists:
            # A stopped cluster (e.g. after a reboot) is restarted; a broken one is reported.
            result = self._kwokctl("start", "cluster", timeout=180, check=False)
            if result.returncode != 0 or not self._wait_ready(timeout=60):
                raise CompareError(
                    f"stale embedded cluster directory {self.cluster_dir} could not be restarted "
                    f"({_last_line(result.stderr)}); "
                    f"run `compare cluster down{self.name_flag()}` and retry"
                )
            return self.status()
        if port is not None:
            _check_port_free(port)
        args = [
            "create", "cluster",
            "--runtime", "binary",
            "--kube-authorization=true",
            "--kube-admission=true",
            # kwokctl would otherwise merge the cluster into ~/.kube/config.
            "--kubeconfig", "",
            "--wait", "2m",
            "--timeout", "5m",
        ]  # fmt: skip
        if port is not None:
            args += ["--kube-apiserver-port", str(port)]
        result = self._kwokctl(*args, timeout=360, check=False)
        if result.returncode != 0:
            raise CompareError(
                f"could not start the embedded cluster: {_last_line(result.stderr)} "
                f"(logs in {self.cluster_dir / 'logs'})"
            )
        self._kwokctl("scale", "node", "--replicas", str(nodes), timeout=120)
        return self.status()

    def down(self) -> bool:
        """Delete the cluster and its processes; False when there was none."""
        if not self.cluster_dir.exists():
            return False
        ensure_binaries()
        pids = self._pids()
        result = self._kwokctl("delete", "cluster", timeout=120, check=False)
        if result.returncode != 0:
            raise CompareError(
                f"could not delete the embedded cluster: {_last_line(result.stderr)}"
            )
        if self.cluster_dir.exists() and not self._live_processes():
            # A stale directory kwokctl cannot parse: nothing runs, so removing it is safe.
            shutil.rmtree(self.cluster_dir)
        # kwokctl signals the components and returns; wait so that "down" means gone.
        deadline = time.monotonic() + 30
        while any(_alive(pid) for pid in pids):
            if time.monotonic() > deadline:
                left = ", ".join(str(pid) for pid in pids if _alive(pid))
                raise CompareError(f"embedded cluster processes still running after down: {left}")
            time.sleep(0.1)
        return True

    def _pids(self) -> list[int]:
        pids = []
        for pid_file in (self.cluster_dir / "pids").glob("*.pid"):
            try:
                pids.append(int(pid_file.read_text().strip()))
            except (OSError, ValueError):
                continue
        return pids

    # -- helpers ---------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(
            {
                # kwokctl runs `kubectl` from PATH in places (e.g. `start cluster`): ours first,
                # never another one the machine may have (a cloud SDK shim, a different version).
                "PATH": os.pathsep.join([str(bin_dir()), env.get("PATH", "")]),
                "KWOK_WORKDIR": str(self.workdir),
                "KWOK_KUBE_VERSION": _kube_version(),
                "KWOK_ETCD_BINARY": tool_path("etcd"),
                "KWOK_KUBE_APISERVER_BINARY": tool_path("kube-apiserver"),
                "KWOK_KUBE_CONTROLLER_MANAGER_BINARY": tool_path("kube-controller-manager"),
                "KWOK_KUBE_SCHEDULER_BINARY": tool_path("kube-scheduler"),
                "KWOK_KUBECTL_BINARY": tool_path("kubectl"),
                "KWOK_CONTROLLER_BINARY": tool_path("kwok"),
            }
        )
        return env

    def name_flag(self) -> str:
        """` --name X` for commands a user is told to run, unless X is the default."""
        return "" if self.name == DEFAULT_NAME else f" --name {self.name}"

    def _config(self) -> Path:
        """kwokctl configuration: every component listens on loopback only."""
        path = self.workdir / "kwokctl.yaml"
        if not path.exists() or path.read_text() != KWOKCTL_CONFIG:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(KWOKCTL_CONFIG)
        return path

    def _kwokctl(
        self, *args: str, timeout: float, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [tool_path("kwokctl"), "--name", self.name, "--config", str(self._config()), *args]
        try:
            result = subprocess.run(
                cmd, env=self.env(), capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired as exc:
            raise CompareError(
                f"kwokctl {' '.join(args[:2])} timed out after {timeout:.0f}s"
            ) from exc
        if check and result.returncode != 0:
            raise CompareError(f"kwokctl {' '.join(args[:2])} failed: {_last_line(result.stderr)}")
        return result

    def _kubectl(
        self, *args: str, timeout: float, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        cmd = [tool_path("kubectl"), "--kubeconfig", str(self.kubeconfig), *args]
        try:
            return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=check)
        except (subprocess.TimeoutExpired, subprocess.CalledProcessError) as exc:
            if check:
                raise CompareError(f"kubectl {' '.join(args)} failed: {exc}") from exc
            return subprocess.CompletedProcess(cmd, 1, "", str(exc))


def _kube_version() -> str:
    from compare.paths import TOOLS_DIR

    for line in (TOOLS_DIR / "versions.env").read_text().splitlines():
        if line.startswith("KUBE_VERSION="):
            return line.split("=", 1)[1].strip()
    raise CompareError("tools/versions.env has no KUBE_VERSION line")


def _alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except (OSError, IndexError):
        return False


def _check_port_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError as exc:
            raise CompareError(
                f"port {port} on 127.0.0.1 is in use ({exc.strerror}); pick another with --port"
            ) from exc


def _last_line(text: str) -> str:
    """The last line of a tool's stderr; kwokctl logs JSON, so take its error message."""
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    if not lines:
        return "no output"
    last = lines[-1]
    try:
        record = json.loads(last)
    except ValueError:
        return last
    if isinstance(record, dict):
        return str(record.get("err") or record.get("msg") or last)
    return last
