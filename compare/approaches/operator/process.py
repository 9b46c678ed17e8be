"""The local operator process: kubebuilder's `make run`, with a pid, a log and a readiness wait.

Each process of a cluster is an *instance* (the default one is "operator"; tests add standby
replicas), a `compare.deploy.processes.LocalProcess` recorded as `<instance>.json` in the
cluster's state directory; its readiness URL is its /healthz, its output goes to
`<instance>.log`. Only a pid whose command line names `webapp_operator` counts as alive (pids
get reused). `OPERATOR` is its lifecycle (`compare.deploy.processes.Controllers`): every
recorded instance is one of the set.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from compare.deploy.processes import Controllers, LocalProcess, alive, read_process, spawn

__all__ = [
    "DEFAULT_INSTANCE",
    "OPERATOR",
    "OperatorOptions",
    "health",
    "is_ready",
    "spawn_operator",
]

DEFAULT_INSTANCE = "operator"
MARKER = "webapp_operator"


@dataclass(frozen=True)
class OperatorOptions:
    """Flags of the local operator; the defaults are the operator's own."""

    resync_seconds: float = 30.0
    lease_duration: float = 15.0
    lease_renew_deadline: float = 10.0
    lease_retry_period: float = 2.0
    log_level: str = "INFO"

    def args(self) -> list[str]:
        """The operator's flags, each named after its field (`--lease-duration=15.0`)."""
        return [f"--{f.name.replace('_', '-')}={getattr(self, f.name)}" for f in fields(self)]


def health(info: LocalProcess) -> dict[str, Any] | None:
    """The operator's /healthz summary (role, leading, ready, counters); None if unreachable."""
    try:
        with urllib.request.urlopen(info.ready_url, timeout=1.0) as response:
            data: dict[str, Any] = json.loads(response.read())
            return data
    except (urllib.error.URLError, OSError, ValueError):
        return None


def is_ready(info: LocalProcess) -> bool:
    """Leading, kopf watching, webhook listening (a standby is healthy but not this)."""
    summary = health(info) or {}
    return bool(summary.get("leading") and summary.get("ready"))


# Every recorded instance, stopped on a claim or a forget; started by `controllers`
# (it looks for a leader of the cluster first).
OPERATOR = Controllers(area="operator", ready=is_ready)


def spawn_operator(
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
) -> LocalProcess:
    """Start one operator process (all namespaces, loopback only) and record it; with
    `supervised`, under `compare.deploy.supervise` (restarted when it exits with an error)."""
    args = [
        sys.executable,
        "-m",
        MARKER,
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
    if identity is None and previous is not None and previous.identity and not alive(previous):
        identity = previous.identity
    identity = identity or f"{socket.gethostname()}_{directory.name}_{uuid.uuid4().hex[:8]}"
    args.append(f"--identity={identity}")
    if webhook_only:
        args.append("--webhook-only")
    # Under the supervisor (`compare.deploy.supervise`): restarted when it exits with an
    # error (a lost Lease), as the kubelet restarts a container.
    if supervised:
        args = [sys.executable, "-m", "compare.deploy.supervise", "--", *args]
    env = {
        "PYTHONUNBUFFERED": "1",
        # glibc gives every thread that allocates an arena of its own (up to 8 per core); with
        # sixteen reconcile threads the freed memory stays scattered over them and the RSS
        # never comes down. Two arenas: the operator's memory follows what it holds.
        "MALLOC_ARENA_MAX": os.environ.get("MALLOC_ARENA_MAX", "2"),
    }
    return spawn(
        directory,
        instance,
        args,
        marker=MARKER,
        ready_url=f"http://127.0.0.1:{health_port}/healthz",
        env=env,
        identity=identity,
        # The caller's directory, as `make run`'s: `python -m` finds the modules from there.
        cwd=Path.cwd(),
    )
