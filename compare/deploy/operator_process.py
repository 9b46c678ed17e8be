"""The local operator process: kubebuilder's `make run`, with a pid, a log and a readiness wait.

Each process of a cluster is an *instance* (the default one is "operator"; tests add standby
replicas). Its state file `<instance>.json` in the cluster's state directory records the pid
and the health port; its output goes to `<instance>.log`. Processes start in their own session
so that they outlive the command that started them, and only a pid whose command line is
`python -m webapp_operator` counts as alive (pids get reused).
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
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from compare.errors import CompareError

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
# Popen objects of the processes this Python process started: polling them reaps zombies.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
_CHILDREN_LOCK = threading.Lock()


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
    with _CHILDREN_LOCK:
        child = _CHILDREN.get(pid)
        if child is not None:
            if child.poll() is None:
                # Our own child: its Popen knows. (Right after exec, /proc/<pid>/cmdline can
                # still be empty for a moment, so the check below would misjudge it.)
                return True
            del _CHILDREN[pid]
            return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    state = stat.rsplit(")", 1)[-1].split()[0]
    return state != "Z" and b"webapp_operator" in cmdline


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
    try:
        data = json.loads(_state_file(directory, instance).read_text())
        return ProcessInfo(**data)
    except (OSError, ValueError, TypeError):
        return None


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
    directory.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as out:
        out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(args)}\n".encode())
        out.flush()
        # The operator runs with the kubeconfig it is given (--kubeconfig) and nothing else:
        # the caller's KUBECONFIG/KUBECONTEXT (often an admin's) must not reach its environment.
        env = {k: v for k, v in os.environ.items() if k not in _CALLER_CLUSTER_ENV}
        env["PYTHONUNBUFFERED"] = "1"
        # glibc gives every thread that allocates an arena of its own (up to 8 per core); with
        # sixteen reconcile threads the freed memory stays scattered over them and the RSS
        # never comes down. Two arenas: the operator's memory follows what it holds.
        env.setdefault("MALLOC_ARENA_MAX", "2")
        # A session of its own: the operator outlives the command that started it and does
        # not receive the terminal's Ctrl-C.
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
    with _CHILDREN_LOCK:
        _CHILDREN[child.pid] = child
    info = ProcessInfo(instance, child.pid, health_port, str(log), time.time(), identity)
    state = _state_file(directory, instance)
    tmp = state.with_suffix(".tmp")
    tmp.write_text(json.dumps(asdict(info)))
    tmp.replace(state)
    return info


_CALLER_CLUSTER_ENV = frozenset({"KUBECONFIG", "KUBECONTEXT"})


def terminate(info: ProcessInfo, *, kill: bool = False, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM (graceful: the operator releases its Lease) or SIGKILL, then wait until gone.
    A graceful stop that overruns the timeout is finished with SIGKILL."""
    if not _alive(info.pid):
        return
    sig = signal.SIGKILL if kill else signal.SIGTERM
    # The recorded pid leads a session of its own (the supervisor and the operator): SIGTERM
    # goes to the supervisor, which passes it on; SIGKILL takes the whole group at once.
    signal_group(info.pid, sig)
    deadline = time.monotonic() + timeout
    while _alive(info.pid) or _group_alive(info.pid):
        if time.monotonic() > deadline:
            if kill:
                raise CompareError(f"operator process {info.pid} survived SIGKILL")
            signal_group(info.pid, signal.SIGKILL)
            kill, deadline = True, time.monotonic() + timeout
        time.sleep(POLL_S)


def signal_group(pid: int, sig: int) -> None:
    """Signal the process and its group (SIGKILL: the group; else the leader, which forwards)."""
    try:
        if sig == signal.SIGKILL:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    # Zombies of our own children count as gone.
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) > 2 and fields[2] == str(pgid) and fields[0] != "Z":
            return True
    return False


def last_log_line(path: Path) -> str:
    """The last non-empty line of a log (what a failed start-up said last)."""
    try:
        lines = [line.strip() for line in path.read_text(errors="replace").splitlines()]
    except OSError:
        return "no log"
    lines = [line for line in lines if line]
    return lines[-1] if lines else "no output"
