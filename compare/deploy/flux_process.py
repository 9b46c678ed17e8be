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

Each process starts in its own session (`compare.deploy.local`), writes its output to
`<name>.log` in the cluster's state directory under the cache, and is recorded in
`<name>.json`; only a pid whose command line still names its binary counts as alive.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from compare.deploy.local import (
    caller_env,
    pid_alive,
    read_record,
    start_session,
    stop_session,
    write_record,
)
from compare.errors import CompareError
from compare.kube import wait_for

POLL_S = 0.1
STOP_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class FluxProcess:
    name: str  # "chart-server", "source-controller", "helm-controller"
    pid: int
    marker: str  # a string its /proc/<pid>/cmdline contains
    log: str
    ready_url: str  # 200 when it serves
    started: float

    @property
    def log_path(self) -> Path:
        return Path(self.log)


def alive(info: FluxProcess) -> bool:
    return pid_alive(info.pid, info.marker.encode())


def _state_file(directory: Path, name: str) -> Path:
    return directory / f"{name}.json"


def read_process(directory: Path, name: str) -> FluxProcess | None:
    return read_record(_state_file(directory, name), FluxProcess)


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
    env: dict[str, str] | None = None,
) -> FluxProcess:
    """Start one process in its own session, its output appended to `<name>.log`."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    environment = caller_env()
    environment.update(env or {})
    pid = start_session(args, log, environment, cwd=directory)
    info = FluxProcess(name, pid, marker, str(log), ready_url, time.time())
    write_record(_state_file(directory, name), info)
    return info


def wait_ready(
    info: FluxProcess, timeout: float, ready: Callable[[FluxProcess], bool] | None = None
) -> None:
    """Until it is ready (default: its ready URL answers 200); a one-line error (its last log
    line) when it exits or does not get ready in time."""
    answers = ready or is_ready

    def look() -> bool:
        if answers(info):
            return True
        if not alive(info):
            raise CompareError(
                f"{info.name} exited during start-up: {last_log_line(info.log_path)} "
                f"(log {info.log})"
            )
        return False

    wait_for(
        look,
        deadline=timeout,
        timed_out=lambda _: CompareError(
            f"{info.name} was not ready within {timeout:.0f}s: "
            f"{last_log_line(info.log_path)} (log {info.log})"
        ),
        interval=POLL_S,
    )


def terminate(info: FluxProcess, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the process, SIGKILL its session when it is still there after the timeout; wait
    until gone."""
    stop_session(
        info.pid, lambda: alive(info), what=f"{info.name} process", timeout=timeout, poll=POLL_S
    )


def forget(directory: Path, name: str) -> None:
    _state_file(directory, name).unlink(missing_ok=True)


def describe_processes(
    processes: Mapping[str, FluxProcess], names: Sequence[str], state_dir: Path
) -> str:
    """Each recorded process by name, running (its pid) or stopped, and where the logs are."""
    parts = []
    for name in names:
        info = processes.get(name)
        state = "stopped" if info is None or not alive(info) else f"pid {info.pid}"
        parts.append(f"{name} {state}")
    return ", ".join(parts) + f"; logs in {state_dir}"


def stop_recorded(directory: Path, names: Sequence[str]) -> list[str]:
    """Stop the processes recorded in `directory` (last named first) and forget them; the
    names of those that were running. The caller holds the directory's lock."""
    stopped = []
    for name in reversed(names):
        info = read_process(directory, name)
        if info is None:
            continue
        if alive(info):
            stopped.append(name)
        terminate(info)
        forget(directory, name)
    return stopped


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
