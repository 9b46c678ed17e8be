"""A cluster's local processes, for every approach that runs controllers beside the cluster
(Flux: `compare.deploy.flux`; Argo CD: `compare.deploy.argocd_process`).

Each process starts in its own session (`compare.deploy.local`), writes its output to
`<name>.log` in the cluster's state directory under the cache, and is recorded in
`<name>.json`; only a pid whose command line still names its binary counts as alive.
`ProcessSet` is what a state directory records, `starting` stops again what a start that
fails had started. The chart server is the same for both approaches: a real Helm repository
(`compare.deploy.flux_charts`) served over HTTP on 127.0.0.1 by Python's `http.server`, as a
team serves charts from any static web server.
"""

from __future__ import annotations

import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compare.deploy.local import (
    caller_env,
    pid_alive,
    read_record,
    read_settings,
    start_session,
    stop_session,
    write_record,
)
from compare.errors import CompareError
from compare.kube import wait_for

POLL_S = 0.1
STOP_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class LocalProcess:
    name: str  # "chart-server", "source-controller", "redis", ...
    pid: int
    marker: str  # a string its /proc/<pid>/cmdline contains
    log: str
    ready_url: str  # 200 when it serves
    started: float

    @property
    def log_path(self) -> Path:
        return Path(self.log)


def alive(info: LocalProcess) -> bool:
    return pid_alive(info.pid, info.marker.encode())


def _state_file(directory: Path, name: str) -> Path:
    return directory / f"{name}.json"


def read_process(directory: Path, name: str) -> LocalProcess | None:
    return read_record(_state_file(directory, name), LocalProcess)


def is_ready(info: LocalProcess) -> bool:
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
) -> LocalProcess:
    """Start one process in its own session, its output appended to `<name>.log`."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    environment = caller_env()
    environment.update(env or {})
    pid = start_session(args, log, environment, cwd=directory)
    info = LocalProcess(name, pid, marker, str(log), ready_url, time.time())
    write_record(_state_file(directory, name), info)
    return info


def wait_ready(
    info: LocalProcess, timeout: float, ready: Callable[[LocalProcess], bool] | None = None
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


def terminate(info: LocalProcess, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the process, SIGKILL its session when it is still there after the timeout; wait
    until gone."""
    stop_session(
        info.pid, lambda: alive(info), what=f"{info.name} process", timeout=timeout, poll=POLL_S
    )


def forget(directory: Path, name: str) -> None:
    _state_file(directory, name).unlink(missing_ok=True)


def describe_processes(
    processes: Mapping[str, LocalProcess], names: Sequence[str], state_dir: Path
) -> str:
    """Each recorded process by name, running (its pid) or stopped, and where the logs are."""
    parts = []
    for name in names:
        info = processes.get(name)
        state = "stopped" if info is None or not alive(info) else f"pid {info.pid}"
        parts.append(f"{name} {state}")
    return ", ".join(parts) + f"; logs in {state_dir}"


@dataclass(frozen=True)
class ProcessSet:
    """The processes recorded in a cluster's state directory (those of `names` found there)
    and the settings they were started with (ports, flags)."""

    state_dir: Path
    names: tuple[str, ...]
    processes: dict[str, LocalProcess]
    settings: Mapping[str, Any]

    @classmethod
    def read(cls, directory: Path, names: Sequence[str]) -> ProcessSet:
        found = {name: p for name in names if (p := read_process(directory, name)) is not None}
        return cls(directory, tuple(names), found, read_settings(directory))

    @property
    def running(self) -> bool:
        """Every process of the set is alive."""
        return len(self.processes) == len(self.names) and all(
            alive(p) for p in self.processes.values()
        )

    @property
    def repository_url(self) -> str | None:
        """The chart server's URL (the HelmRepositories and Applications name it), from the
        port it was started on."""
        port = self.settings.get("chart_port")
        return f"http://127.0.0.1:{port}" if isinstance(port, int) else None

    def describe(self) -> str:
        return describe_processes(self.processes, self.names, self.state_dir)


@contextmanager
def starting(directory: Path) -> Iterator[list[LocalProcess]]:
    """The list a start appends each process it spawns to: when the start fails (or is
    interrupted), every one of them is stopped and forgotten again, last first."""
    started: list[LocalProcess] = []
    try:
        yield started
    except BaseException:
        for info in reversed(started):
            terminate(info)
            forget(directory, info.name)
        raise


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
