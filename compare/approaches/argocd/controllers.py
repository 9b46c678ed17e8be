"""The local Argo CD processes of one cluster: Redis, the chart server, the repo-server and the
application controller.

- **Redis** is Debian's `redis-server` (installed by `make setup` when missing), on a free
  127.0.0.1 port, with no persistence: both controllers keep their caches there, and Argo CD
  rebuilds them from the cluster and the repository after a restart.
- **The chart source** is a Helm repository of charts/webapp served over HTTP on 127.0.0.1, as
  for Flux (`compare.deploy.chart_server`), in this state directory of its own.
- **argocd-repo-server** renders the chart: it fetches index.yaml and the archive itself and
  runs `helm template` with the Helm 3 CLI built beside it (on its PATH). It needs no cluster
  access. Its gRPC port and its metrics/health port are on 127.0.0.1, without TLS (loopback).
- **argocd-application-controller** runs under its ServiceAccount's token kubeconfig.
  `ARGOCD_FAKE_IN_CLUSTER` makes it use that kubeconfig for the in-cluster destination
  (`https://kubernetes.default.svc`), which it would otherwise read from a pod's mounted
  token. Its metrics/health server binds 0.0.0.0 (Argo CD has no flag for the address); the
  toolkit only talks to it on 127.0.0.1.

Every process starts in its own session, logs to `<name>.log` and is recorded in `<name>.json`
in the cluster's state directory under the cache (`compare.deploy.processes` does that for
both approaches); one set per cluster, serialised by a file lock.
"""

from __future__ import annotations

import os
import shutil
import socket
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from compare.approaches.argocd.install import (
    APPLICATION_CONTROLLER,
    ARGOCD_NAMESPACE,
    CONTROLLERS,
    REPO_SERVER,
    apply_argocd_objects,
    argocd_bin_dir,
    check_argocd_binaries,
)
from compare.cluster import ClusterTarget
from compare.deploy.chart_server import CHART_SERVER, serve_charts
from compare.deploy.install import write_identity_kubeconfig
from compare.deploy.local import free_port
from compare.deploy.processes import (
    Controllers,
    LocalProcess,
    ProcessSet,
    alive,
    forget,
    is_ready,
    last_log_line,
    port_taken,
    spawn,
    terminate,
    wait_ready,
)
from compare.errors import CompareError

REDIS = "redis"
# In start order; stopped in reverse.
PROCESSES = (REDIS, CHART_SERVER, REPO_SERVER, APPLICATION_CONTROLLER)
START_TIMEOUT_S = 60.0
# The application controller's `--self-heal-backoff-timeout-seconds` (Argo CD v3.2.9's default,
# not overridden by `start_argocd`'s callers): the first self-heal after a sync starts on the
# watch event, a second one (a sync that raced a fault's next change) waits this long.
SELF_HEAL_BACKOFF_S = 2.0
REDIS_TIMEOUT_S = 2.0
# A Unix socket path is at most 107 bytes.
_SOCKET_PATH_MAX = 100


# -- Redis ------------------------------------------------------------------------------------


def redis_binary() -> str:
    found = shutil.which("redis-server")
    if found is None:
        raise CompareError(
            "redis-server is not installed (Argo CD keeps its caches in Redis): run `make setup`"
            " (as root it runs `apt-get install redis-server`) or install Debian's redis-server"
        )
    return found


def redis_args(binary: str, port: int, directory: Path) -> list[str]:
    """Loopback only, no persistence (`--save ""`, no AOF): nothing of it outlives the process."""
    return [
        binary,
        "--bind",
        "127.0.0.1",
        "--port",
        str(port),
        "--protected-mode",
        "yes",
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--dir",
        str(directory),
    ]


def redis_ping(port: int, timeout: float = REDIS_TIMEOUT_S) -> bool:
    """True when Redis on 127.0.0.1:port answers PING with PONG."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
            sock.sendall(b"PING\r\n")
            return sock.recv(64).startswith(b"+PONG")
    except OSError:
        return False


def _redis_port(info: LocalProcess) -> int:
    return int(info.ready_url.rsplit(":", 1)[-1])


def process_ready(info: LocalProcess) -> bool:
    if info.name == REDIS:
        return redis_ping(_redis_port(info))
    return is_ready(info)


# -- the processes ----------------------------------------------------------------------------


def check_running(cluster: ClusterTarget) -> ProcessSet:
    """The handle when every process is alive and answers its health check; otherwise a
    one-line error naming the first one that does not (a controller or Redis down is an
    error, never a verdict)."""
    handle = ARGOCD.status(cluster)
    for name in PROCESSES:
        info = handle.processes.get(name)
        if info is None or not alive(info):
            raise CompareError(
                f"Argo CD's {name} is not running ({handle.describe()}): "
                "run `compare deploy argocd` to start it"
            )
        if not process_ready(info):
            raise CompareError(
                f"Argo CD's {name} (pid {info.pid}) does not answer its health check: "
                f"{last_log_line(info.log_path)} (log {info.log})"
            )
    return handle


def _controller_args(
    name: str,
    binary: Path,
    ports: Mapping[str, int],
    kubeconfig: Path,
    extra: list[str],
) -> list[str]:
    redis = f"--redis=127.0.0.1:{ports['redis']}"
    common = ["--loglevel=info", "--logformat=json", redis]
    if name == REPO_SERVER:
        return [
            str(binary),
            "--address=127.0.0.1",
            f"--port={ports['repo']}",
            "--metrics-address=127.0.0.1",
            f"--metrics-port={ports['repo_metrics']}",
            "--disable-tls",
            *common,
            *extra,
        ]
    return [
        str(binary),
        f"--kubeconfig={kubeconfig}",
        f"--namespace={ARGOCD_NAMESPACE}",
        # Each Application lives in the namespace it deploys into.
        "--application-namespaces=*",
        f"--repo-server=127.0.0.1:{ports['repo']}",
        "--repo-server-plaintext",
        f"--metrics-port={ports['controller_metrics']}",
        *common,
        *extra,
    ]


def start_argocd(
    cluster: ClusterTarget,
    *,
    bin_dir: Path | None = None,
    extra_args: Mapping[str, list[str]] | None = None,
    timeout: float = START_TIMEOUT_S,
) -> ProcessSet:
    """Start what is not running (idempotent). A process started here that does not become
    ready is stopped again, with every other one started by this call, before the error.
    `extra_args` adds flags per controller (the self-heal timing:
    `--self-heal-timeout-seconds`, `--self-heal-backoff-*`); a controller running with other
    extra flags than these is restarted with them (they change the answer)."""
    wanted = {name: list((extra_args or {}).get(name, [])) for name in CONTROLLERS}
    return ARGOCD.start(
        cluster,
        launch=partial(_launch, bin_dir=bin_dir, wanted=wanted, timeout=timeout),
        current=partial(_started_with, wanted),
    )


def _started_with(wanted: Mapping[str, list[str]], handle: ProcessSet) -> bool:
    """Whether the controllers run with these extra flags."""
    recorded = handle.settings.get("extra_args") or {}
    return all(recorded.get(name, []) == wanted.get(name, []) for name in CONTROLLERS)


def _launch(
    cluster: ClusterTarget,
    directory: Path,
    handle: ProcessSet,
    settings: dict[str, Any],
    started: list[LocalProcess],
    *,
    bin_dir: Path | None = None,
    wanted: Mapping[str, list[str]] | None = None,
    timeout: float = START_TIMEOUT_S,
) -> None:
    """Start what is not running, restarting what runs with other flags or talks to a process
    started anew (`Controllers.start` holds the lock)."""
    wanted = wanted or {}
    recorded = settings.get("extra_args") or {}
    check_argocd_binaries(bin_dir)
    redis = redis_binary()
    binaries = argocd_bin_dir(bin_dir)
    apply_argocd_objects(cluster)
    running = {n: p for n, p in handle.processes.items() if alive(p)}
    for name in CONTROLLERS:
        if name in running and recorded.get(name, []) != wanted.get(name, []):
            terminate(running.pop(name))
            forget(directory, name)
    # The controllers' Redis and repo-server addresses are fixed at their start: a process
    # started anew restarts those that talk to it.
    for needed, clients in (
        (REDIS, (REPO_SERVER, APPLICATION_CONTROLLER)),
        (REPO_SERVER, (APPLICATION_CONTROLLER,)),
    ):
        if needed not in running:
            for name in clients:
                if name in running:
                    terminate(running.pop(name))
                    forget(directory, name)
    # A process still running keeps its port; one started anew gets the port it had when
    # that is still free (Applications name the chart server's URL).
    ports = {}
    for key, name in _PORTS.items():
        old = settings.get(f"{key}_port")
        if name in running and isinstance(old, int):
            ports[key] = old
        else:
            ports[key] = free_port(old if isinstance(old, int) else None)
    env = _environment(directory, binaries)
    kubeconfig = directory / f"{APPLICATION_CONTROLLER}.kubeconfig"
    for name in PROCESSES:
        if name in running:
            continue
        for attempt in range(_PORT_TRIES):
            info = _spawn(
                cluster,
                directory,
                name,
                redis,
                binaries,
                ports,
                env,
                kubeconfig,
                list(wanted.get(name, [])),
            )
            started.append(info)
            try:
                wait_ready(info, timeout, ready=process_ready)
                break
            except CompareError:
                # A port free when checked can be taken before the listener starts: the
                # process then exits at once; it gets fresh ports, a bounded number of times.
                if attempt + 1 == _PORT_TRIES or not port_taken(info):
                    raise
                terminate(info)
                forget(directory, name)
                started.remove(info)
                for key, owner in _PORTS.items():
                    if owner == name:
                        ports[key] = free_port()
    settings.update({f"{key}_port": port for key, port in ports.items()})
    settings["extra_args"] = {name: list(wanted.get(name, [])) for name in CONTROLLERS}


_PORT_TRIES = 3

# Each port setting and the process that listens on it.
_PORTS = {
    "redis": REDIS,
    "chart": CHART_SERVER,
    "repo": REPO_SERVER,
    "repo_metrics": REPO_SERVER,
    "controller_metrics": APPLICATION_CONTROLLER,
}


def _spawn(
    cluster: ClusterTarget,
    directory: Path,
    name: str,
    redis: str,
    binaries: Path,
    ports: Mapping[str, int],
    env: Mapping[str, str],
    kubeconfig: Path,
    extra: list[str],
) -> LocalProcess:
    if name == REDIS:
        return spawn(
            directory,
            REDIS,
            redis_args(redis, ports["redis"], directory),
            marker=f"127.0.0.1:{ports['redis']}",
            ready_url=f"redis://127.0.0.1:{ports['redis']}",
        )
    if name == CHART_SERVER:
        return serve_charts(directory, ports["chart"])
    args = _controller_args(name, binaries / name, ports, kubeconfig, extra)
    if name == REPO_SERVER:
        # ?full=true: it also dials its own gRPC port.
        ready = f"http://127.0.0.1:{ports['repo_metrics']}/healthz?full=true"
        return spawn(
            directory, name, args, marker=str(binaries / name), ready_url=ready, env=dict(env)
        )
    write_identity_kubeconfig(cluster, ARGOCD_NAMESPACE, APPLICATION_CONTROLLER, kubeconfig)
    ready = f"http://127.0.0.1:{ports['controller_metrics']}/healthz"
    return spawn(
        directory,
        name,
        args,
        marker=str(binaries / name),
        ready_url=ready,
        env={**env, "KUBECONFIG": str(kubeconfig)},
    )


def _environment(directory: Path, binaries: Path) -> dict[str, str]:
    """What both controllers run with: the Helm 3 CLI first on PATH, their own HOME and TMPDIR
    (helm's and git's caches, the repo-server's chart checkouts) in the state directory, no
    GnuPG (nothing is signed here), the repo-server's askpass socket of its own (its default
    /tmp path would be shared by every cluster's repo-server)."""
    home, tmp = directory / "home", directory / "tmp"
    home.mkdir(exist_ok=True)
    tmp.mkdir(exist_ok=True)
    socket_path = directory / "askpass.sock"
    if len(str(socket_path)) > _SOCKET_PATH_MAX:
        raise CompareError(
            f"the cache directory's path is too long for a Unix socket ({socket_path}):"
            " set COMPARE_CACHE_DIR to a shorter one"
        )
    return {
        "PATH": f"{binaries}{os.pathsep}{os.environ.get('PATH', '')}",
        "HOME": str(home),
        "TMPDIR": str(tmp),
        "ARGOCD_GPG_ENABLED": "false",
        "ARGOCD_ASK_PASS_SOCK": str(socket_path),
        "ARGOCD_FAKE_IN_CLUSTER": "true",
    }


# In start order, stopped in reverse (Redis last); ready when each answers its health check.
ARGOCD = Controllers(
    area="argocd/clusters",
    names=PROCESSES,
    launch=_launch,
    ready=process_ready,
    current=partial(_started_with, {}),
)
