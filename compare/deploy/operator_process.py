"""The local operator process: kubebuilder's `make run`, with a pid, a log and a readiness wait.

Each process of a cluster is an *instance* (the default one is "operator"; tests add standby
replicas). Its state file `<instance>.json` in the cluster's state directory records the pid
and the health port; its output goes to `<instance>.log`. Processes start in their own session
so that they outlive the command that started them, and only a pid whose command line is
`python -m webapp_operator` counts as alive (pids get reused).
"""

from __future__ import annotations

import json
import socket
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compare.deploy.local import (
    caller_env,
    pid_alive,
    read_record,
    start_session,
    stop_session,
    write_record,
)

__all__ = [
    "DEFAULT_INSTANCE",
    "OperatorOptions",
    "ProcessInfo",
    "health",
    "instances",
    "is_ready",
    "is_running",
    "last_log_line",
    "read_process",
    "spawn",
    "terminate",
]

DEFAULT_INSTANCE = "operator"
POLL_S = 0.05
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class OperatorOptions:
    """Flags of the local operator; the defaults are the operator's own."""

    resync_seconds: float = 30.0
    lease_duration: float = 15.0
    lease_renew_deadline: float = 10.0
    lease_retry_period: float = 2.0
    log_level: str = "INFO"

    def args(self) -> list[str]:
        return [
            f"--resync-seconds={self.resync_seconds}",
            f"--lease-duration={self.lease_duration}",
            f"--lease-renew-deadline={self.lease_renew_deadline}",
            f"--lease-retry-period={self.lease_retry_period}",
            f"--log-level={self.log_level}",
        ]


@dataclass(frozen=True)
class ProcessInfo:
    instance: str
    pid: int
    health_port: int
    log: str
    started: float
    # The leader-election identity (its Lease holderIdentity); empty in older state files.
    identity: str = ""

    @property
    def log_path(self) -> Path:
        return Path(self.log)


def _state_file(directory: Path, instance: str) -> Path:
    return directory / f"{instance}.json"


def _alive(pid: int) -> bool:
    """A live, non-zombie process running the operator module."""
    return pid_alive(pid, b"webapp_operator")


def instances(directory: Path) -> list[ProcessInfo]:
    """Every recorded process of one state directory (running or not)."""
    found = []
    for path in sorted(directory.glob("*.json")):
        info = read_process(directory, path.stem)
        if info is not None:
            found.append(info)
    return found


def read_process(directory: Path, instance: str = DEFAULT_INSTANCE) -> ProcessInfo | None:
    """The recorded process of an instance, whether or not it still runs (None: never ran)."""
    return read_record(_state_file(directory, instance), ProcessInfo)


def is_running(info: ProcessInfo | None) -> bool:
    return info is not None and _alive(info.pid)


def health(info: ProcessInfo) -> dict[str, Any] | None:
    """The operator's /healthz summary (role, leading, ready, counters); None if unreachable."""
    url = f"http://127.0.0.1:{info.health_port}/healthz"
    try:
        with urllib.request.urlopen(url, timeout=1.0) as response:
            data: dict[str, Any] = json.loads(response.read())
            return data
    except (urllib.error.URLError, OSError, ValueError):
        return None


def is_ready(info: ProcessInfo) -> bool:
    """Leading, kopf watching, webhook listening (a standby is healthy but not this)."""
    summary = health(info) or {}
    return bool(summary.get("leading") and summary.get("ready"))


def spawn(
    directory: Path,
    *,
    instance: str,
    kubeconfig: Path,
    health_port: int,
    webhook_port: int | None,
    cert_dir: Path,
    options: OperatorOptions,
    identity: str | None = None,
    webhook_only: bool = False,
    supervised: bool = True,
) -> ProcessInfo:
    """Start one operator process (all namespaces, loopback only) and record it; with
    `supervised`, under `compare.deploy.supervise` (restarted when it exits with an error)."""
    log = directory / f"{instance}.log"
    args = [
        sys.executable,
        "-m",
        "webapp_operator",
        "--all-namespaces",
        f"--kubeconfig={kubeconfig}",
        "--health-addr=127.0.0.1",
        f"--health-port={health_port}",
        *options.args(),
    ]
    if webhook_port:
        args += [
            "--webhook-addr=127.0.0.1",
            f"--webhook-port={webhook_port}",
            f"--webhook-cert-dir={cert_dir}",
        ]
    else:
        args.append("--webhook-port=0")
    # Chosen here, so that a Lease holder can be traced back to its local process. The same
    # local replica started again (after a SIGKILL, a crash) keeps its identity and so takes
    # its own Lease back at once, as a restarted container of the same pod does.
    previous = read_process(directory, instance)
    if identity is None and previous is not None and previous.identity and not _alive(previous.pid):
        identity = previous.identity
    identity = identity or f"{socket.gethostname()}_{directory.name}_{uuid.uuid4().hex[:8]}"
    args.append(f"--identity={identity}")
    if webhook_only:
        args.append("--webhook-only")
    # Under the supervisor (`compare.deploy.supervise`): restarted when it exits with an
    # error (a lost Lease), as the kubelet restarts a container.
    if supervised:
        args = [sys.executable, "-m", "compare.deploy.supervise", "--", *args]
    # The operator runs with the kubeconfig it is given (--kubeconfig) and nothing else:
    # the caller's KUBECONFIG/KUBECONTEXT (often an admin's) must not reach its environment.
    env = caller_env()
    env["PYTHONUNBUFFERED"] = "1"
    # glibc gives every thread that allocates an arena of its own (up to 8 per core); with
    # sixteen reconcile threads the freed memory stays scattered over them and the RSS
    # never comes down. Two arenas: the operator's memory follows what it holds.
    env.setdefault("MALLOC_ARENA_MAX", "2")
    pid = start_session(args, log, env)
    info = ProcessInfo(instance, pid, health_port, str(log), time.time(), identity)
    write_record(_state_file(directory, instance), info)
    return info


def terminate(info: ProcessInfo, *, kill: bool = False, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM (graceful: the operator releases its Lease) or SIGKILL, then wait until gone.
    A graceful stop that overruns the timeout is finished with SIGKILL. The recorded pid leads
    a session of its own (the supervisor and the operator): SIGTERM goes to the supervisor,
    which passes it on; SIGKILL takes the whole group at once."""
    stop_session(
        info.pid,
        lambda: _alive(info.pid),
        what="operator process",
        kill=kill,
        timeout=timeout,
        poll=POLL_S,
    )


def last_log_line(path: Path) -> str:
    """The last non-empty line of a log (what a failed start-up said last)."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError:
        return "no log"
    lines = [line for line in lines if line]
    return lines[-1] if lines else "no output"
