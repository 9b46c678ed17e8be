"""The local processes of an approach per cluster, and their one lifecycle (`Controllers`):
the toolkit's operator's, Flux's and Argo CD's (each approach's `controllers` module, in
`compare.approaches`) are each one `Controllers`, configured by data.

Each process starts in its own session (`compare.deploy.local`), writes its output to
`<name>.log` in the cluster's state directory under the cache (`compare.cluster.state_dir`),
and is recorded in `<name>.json` (`LocalProcess`); only a pid whose command line still names
what was started counts as alive. `ProcessSet` is what a state directory records. The
lifecycle: `claimed` (the directory locked and bound to this cluster: what an earlier cluster
of its name left is stopped and wiped), `start` (what is not running, each one waited ready;
a start that fails stops again what it started), `status`, `stop` (last started first) and
`forget` (stopped, state dropped). The chart server is the same for Flux and Argo CD
(`compare.deploy.chart_server`).
"""

from __future__ import annotations

import json
import shutil
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from compare.cluster import ClusterTarget, state_dir
from compare.deploy.local import (
    caller_env,
    claim_for_cluster,
    cluster_uid,
    pid_alive,
    read_record,
    read_settings,
    save_settings,
    start_session,
    state_lock,
    stop_session,
    write_record,
)
from compare.errors import CompareError
from compare.kube import wait_for

POLL_S = 0.1
# A graceful stop's wait before SIGKILL: long enough for the operator to release its Lease.
STOP_TIMEOUT_S = 20.0


@dataclass(frozen=True)
class LocalProcess:
    name: str  # "chart-server", "source-controller", "redis", ...
    pid: int
    marker: str  # a string its /proc/<pid>/cmdline contains
    log: str
    ready_url: str  # 200 when it serves (the operator: its /healthz)
    started: float
    # A replica's leader-election identity (its Lease holderIdentity); empty for the others.
    identity: str = ""

    @property
    def log_path(self) -> Path:
        return Path(self.log)


def alive(info: LocalProcess | None) -> bool:
    """A process recorded (not None) and still running what it was started as."""
    return info is not None and pid_alive(info.pid, info.marker.encode())


def _state_file(directory: Path, name: str) -> Path:
    return directory / f"{name}.json"


def read_process(directory: Path, name: str) -> LocalProcess | None:
    """The recorded process `name`, whether or not it still runs (None: never started)."""
    return read_record(_state_file(directory, name), LocalProcess)


def recorded(directory: Path) -> list[LocalProcess]:
    """Every process recorded in a state directory, by name (settings.json is none)."""
    found = (read_process(directory, path.stem) for path in sorted(directory.glob("*.json")))
    return [info for info in found if info is not None]


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
    identity: str = "",
    cwd: Path | None = None,
) -> LocalProcess:
    """Start one process in its own session (in `cwd`, default the state directory), its
    output appended to `<name>.log`. The caller's cluster settings never reach it: it runs
    with the kubeconfig it is given."""
    directory.mkdir(parents=True, exist_ok=True)
    log = directory / f"{name}.log"
    environment = caller_env()
    environment.update(env or {})
    pid = start_session(args, log, environment, cwd=cwd or directory)
    info = LocalProcess(name, pid, marker, str(log), ready_url, time.time(), identity)
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


def terminate(info: LocalProcess, *, kill: bool = False, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the process (graceful: the operator releases its Lease) or SIGKILL its session;
    a graceful stop still there after the timeout is finished with SIGKILL; wait until gone.
    The pid leads a session of its own (the operator's: its supervisor and the operator):
    SIGTERM goes to the leader, which passes it on; SIGKILL takes the whole group at once."""
    stop_session(
        info.pid,
        lambda: alive(info),
        what=f"{info.name} process",
        kill=kill,
        timeout=timeout,
        poll=POLL_S,
    )


def forget(directory: Path, name: str) -> None:
    _state_file(directory, name).unlink(missing_ok=True)


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
        """Those of `names` recorded in `directory` (no names: every one recorded)."""
        if not names:
            found = {p.name: p for p in recorded(directory)}
            return cls(directory, tuple(found), found, read_settings(directory))
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
        """Each process by name, running (its pid) or stopped, and where the logs are."""
        parts = []
        for name in self.names:
            info = self.processes.get(name)
            parts.append(f"{name} {f'pid {info.pid}' if alive(info) and info else 'stopped'}")
        return ", ".join(parts) + f"; logs in {self.state_dir}"


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


def stop_recorded(directory: Path, names: Sequence[str], *, kill: bool = False) -> list[str]:
    """Stop the processes recorded in `directory` (last named first; no names: every one) and
    forget them; the names of those that were running. The caller holds the directory's lock."""
    stopped = []
    found = [read_process(directory, name) for name in names] if names else recorded(directory)
    for info in reversed(found):
        if info is None:
            continue
        if alive(info):
            stopped.append(info.name)
        terminate(info, kill=kill)
        forget(directory, info.name)
    return stopped


# What a start does once the directory is claimed and the set found not running: start what is
# missing (appending each process to `started`, waiting for it), noting ports and flags in the
# settings (saved afterwards).
Launch = Callable[[ClusterTarget, Path, ProcessSet, dict[str, Any], list[LocalProcess]], None]


@dataclass(frozen=True)
class Controllers:
    """The lifecycle of one approach's local processes, one set per cluster: lock, claim,
    start, status, stop, forget. What differs per approach is data: where its state lives,
    its processes, how they are started (`launch`) and when they are ready."""

    area: str  # the state directory's place under the cache: "operator", "flux/clusters"
    # In start order (stopped in reverse); none: whichever are recorded (operator replicas).
    names: tuple[str, ...] = ()
    launch: Launch | None = None
    ready: Callable[[LocalProcess], bool] = is_ready
    # Whether a running set was started as this start asks (else `launch` restarts some).
    current: Callable[[ProcessSet], bool] = lambda _: True

    def state_dir(self, cluster: ClusterTarget) -> Path:
        return state_dir(cluster, self.area)

    @contextmanager
    def claimed(self, cluster: ClusterTarget) -> Iterator[Path]:
        """The cluster's state directory, locked and bound to it: processes left by an
        earlier cluster of this name (deleted without `compare cluster down`) hold its tokens
        and certificates, so they are stopped and their state wiped first."""
        with state_lock(self.state_dir(cluster)) as directory:
            claim_for_cluster(
                directory, cluster_uid(cluster), lambda: stop_recorded(directory, self.names)
            )
            yield directory

    def status(self, cluster: ClusterTarget) -> ProcessSet:
        return ProcessSet.read(self.state_dir(cluster), self.names)

    def start(
        self,
        cluster: ClusterTarget,
        *,
        launch: Launch | None = None,
        current: Callable[[ProcessSet], bool] | None = None,
    ) -> ProcessSet:
        """Start what is not running (idempotent: a running, ready, current set is left as it
        is). A process started here that does not become ready is stopped again, with every
        other one this call started, before the error. `launch`, `current`: this call's own."""
        run = launch or self.launch
        if run is None:
            raise CompareError(f"the processes of {self.area} have no launcher")
        with self.claimed(cluster) as directory:
            handle = ProcessSet.read(directory, self.names)
            ready = handle.running and all(self.ready(p) for p in handle.processes.values())
            if ready and (current or self.current)(handle):
                return handle
            settings = dict(handle.settings)
            with starting(directory) as started:
                run(cluster, directory, handle, settings, started)
            save_settings(directory, settings)
            return ProcessSet.read(directory, self.names)

    def stop(self, cluster: ClusterTarget, *, kill: bool = False) -> list[str]:
        """Stop the cluster's processes (SIGTERM, or SIGKILL with `kill`); the names of those
        that were running."""
        with state_lock(self.state_dir(cluster)) as directory:
            return stop_recorded(directory, self.names, kill=kill)

    def forget(self, cluster: ClusterTarget) -> None:
        """Stop the processes and drop their state (tokens, certificates, caches, logs): for a
        cluster that is going away, so no process or credential outlives it."""
        directory = self.state_dir(cluster)
        if not directory.exists():
            return
        self.stop(cluster)
        shutil.rmtree(directory, ignore_errors=True)


def port_taken(info: LocalProcess) -> bool:
    """The process is gone and its newest start says its listening address was in use."""
    return not alive(info) and "address already in use" in last_log_line(info.log_path).lower()


def last_log_line(path: Path, *, skip: str | None = None) -> str:
    """What the newest start said: its first error line (a refused flag is followed by the
    usage text), else its last line; lines holding `skip` (another writer's) left out."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "no log"
    lines = [line.strip() for line in text.split("\n--- ")[-1].splitlines()[1:]]
    lines = [line for line in lines if line and (skip is None or skip not in line)]
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
