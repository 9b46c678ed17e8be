"""The local Flux processes of one cluster: the chart repository server and the two controllers.

- **The chart source** is a real Helm repository: charts/webapp packaged by `helm package`,
  indexed by `helm repo index` and served over HTTP on 127.0.0.1 by a separate process (Python's
  `http.server`), as a team serves charts from any static web server. source-controller fetches
  its index.yaml and the chart archive exactly as from any other repository; an OCI registry
  would need a registry binary we do not build, and a GitRepository a git server.
- **source-controller** and **helm-controller** run from the cache's bin/ with the cluster in
  `KUBECONFIG` (their only way to be given one), a token kubeconfig of their own ServiceAccount,
  and every listener (metrics, health, artifact storage) on a free 127.0.0.1 port. Leader
  election is off: one process of each per cluster, recorded here.

Each process starts in its own session (it outlives the command that started it), writes its
output to `<name>.log` in the cluster's state directory under the cache, and is recorded in
`<name>.json`; only a pid whose command line still names its binary counts as alive.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from compare.errors import CompareError

POLL_S = 0.1
STOP_TIMEOUT_S = 15.0
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
_CHILDREN_LOCK = threading.Lock()
# The caller's cluster settings must not reach a controller: it gets its own KUBECONFIG.
_CALLER_ENV = frozenset({"KUBECONFIG", "KUBECONTEXT"})


@dataclass(frozen=True)
class FluxProcess:
    name: str  # "chart-server", "source-controller", "helm-controller"
    pid: int
    marker: str  # a string its /proc/<pid>/cmdline contains
    log: str
    ready_url: str  # 200 when it serves
    started: float
    ports: dict[str, int]

    @property
    def log_path(self) -> Path:
        return Path(self.log)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def alive(info: FluxProcess) -> bool:
    with _CHILDREN_LOCK:
        child = _CHILDREN.get(info.pid)
        if child is not None:
            if child.poll() is None:
                return True
            del _CHILDREN[info.pid]
            return False
    try:
        stat = Path(f"/proc/{info.pid}/stat").read_text()
        cmdline = Path(f"/proc/{info.pid}/cmdline").read_bytes()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state != "Z" and info.marker.encode() in cmdline


def _state_file(directory: Path, name: str) -> Path:
    return directory / f"{name}.json"


def read_process(directory: Path, name: str) -> FluxProcess | None:
    try:
        return FluxProcess(**json.loads(_state_file(directory, name).read_text()))
    except (OSError, ValueError, TypeError):
        return None


def is_ready(info: FluxProcess) -> bool:
    try:
        with urllib.request.urlopen(info.ready_url, timeout=1.0) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError, ValueError):
        return False


def spawn(
    directory: Path,
    name: str,
    args: list[str],
    *,
    marker: str,
    ready_url: str,
    ports: dict[str, int],
    env: dict[str, str] | None = None,
) -> FluxProcess:
    """Start one process in its own session, its output appended to `<name>.log`."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    environment = {k: v for k, v in os.environ.items() if k not in _CALLER_ENV}
    environment.update(env or {})
    with log.open("ab") as out:
        out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(args)}\n".encode())
        out.flush()
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=environment,
            cwd=directory,
            start_new_session=True,
        )
    with _CHILDREN_LOCK:
        _CHILDREN[child.pid] = child
    info = FluxProcess(name, child.pid, marker, str(log), ready_url, time.time(), ports)
    state = _state_file(directory, name)
    tmp = state.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(info)))
    tmp.replace(state)
    return info


def wait_ready(info: FluxProcess, timeout: float) -> None:
    """Until its ready URL answers 200; a one-line error (its last log line) when it exits or
    does not get ready in time."""
    deadline = time.monotonic() + timeout
    while not is_ready(info):
        if not alive(info):
            raise CompareError(
                f"{info.name} exited during start-up: {last_log_line(info.log_path)} "
                f"(log {info.log})"
            )
        if time.monotonic() > deadline:
            raise CompareError(
                f"{info.name} was not ready within {timeout:.0f}s: "
                f"{last_log_line(info.log_path)} (log {info.log})"
            )
        time.sleep(POLL_S)


def terminate(info: FluxProcess, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the process's session, SIGKILL what is left after the timeout; wait until gone."""
    if not alive(info):
        return
    sig = signal.SIGTERM
    deadline = time.monotonic() + timeout
    while alive(info):
        try:
            os.killpg(info.pid, sig)
        except ProcessLookupError:
            break
        except PermissionError:
            os.kill(info.pid, sig)
        while alive(info) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        if alive(info):
            if sig == signal.SIGKILL:
                raise CompareError(f"{info.name} process {info.pid} survived SIGKILL")
            sig, deadline = signal.SIGKILL, time.monotonic() + timeout


def forget(directory: Path, name: str) -> None:
    _state_file(directory, name).unlink(missing_ok=True)


def last_log_line(path: Path) -> str:
    """What the newest start said: its first error line (a refused flag is followed by the
    usage text), else its last line."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "no log"
    lines = [line.strip() for line in text.split("\n--- ")[-1].splitlines()[1:]]
    lines = [line for line in lines if line]
    if not lines:
        return "no output"
    errors = [line for line in lines if _is_error(line)]
    line = errors[0] if errors else lines[-1]
    # The controllers log JSON: the message and the error are what a user needs.
    try:
        record = json.loads(line)
    except ValueError:
        return line[:300]
    if isinstance(record, dict):
        parts = [str(record.get(k)) for k in ("msg", "error") if record.get(k)]
        return ": ".join(parts)[:300] or line[:300]
    return line[:300]


def _is_error(line: str) -> bool:
    if line.startswith(("invalid argument", "unknown flag", "Error", "error")):
        return True
    try:
        record = json.loads(line)
    except ValueError:
        return False
    return isinstance(record, dict) and record.get("level") == "error"


def chart_server_args(port: int, repo: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "http.server",
        str(port),
        "--bind",
        "127.0.0.1",
        "--directory",
        str(repo),
    ]
