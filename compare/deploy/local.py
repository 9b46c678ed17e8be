"""What the local processes of the approaches share: the operator's, and Flux's controllers and
chart server.

- a state directory per cluster, serialised by `state_lock` (a thread lock plus a file lock, so
  two `compare` processes do not race either), with its `settings.json`;
- free ports on 127.0.0.1 (`free_port`, from `compare.cluster.ports`: never handed out twice,
  across processes too);
- processes started in a session of their own (they outlive the command that started them),
  their output appended to a log, recorded in a JSON file; a recorded pid counts as alive only
  while its command line still names what was started (pids get reused);
- stopping such a session: SIGTERM (graceful) or SIGKILL, until it is gone.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import urllib3
from kubernetes import client

from compare import outputfile
from compare.cluster import ClusterTarget
from compare.cluster.ports import free_port as free_port  # re-exported: its old home
from compare.errors import CompareError
from compare.kube import wait as kube_wait

T = TypeVar("T")

# The caller's cluster settings must not reach a local process: it is given its own.
CALLER_CLUSTER_ENV = frozenset({"KUBECONFIG", "KUBECONTEXT"})

# -- the state directory ----------------------------------------------------------------------

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def state_lock(directory: Path) -> Iterator[Path]:
    """Serialise the management of one state directory, across threads and processes."""
    directory.mkdir(parents=True, exist_ok=True)
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(str(directory), threading.Lock())
    with lock, outputfile.open_append(directory / ".lock") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_json(path: Path, data: Any, *, indent: int | None = None) -> None:
    """Replace `path` atomically (a reader sees the old file or the new one)."""
    outputfile.write_text(path, json.dumps(data, indent=indent), mode=0o600)


def read_settings(directory: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((directory / "settings.json").read_text())
        return data
    except (OSError, ValueError):
        return {}


def save_settings(directory: Path, settings: dict[str, Any]) -> None:
    write_json(directory / "settings.json", settings, indent=2)


# -- whose state it is -------------------------------------------------------------------------

CLUSTER_UID_KEY = "clusterUid"


def cluster_uid(cluster: ClusterTarget) -> str | None:
    """What tells one cluster from another that reuses its name and address (an embedded
    cluster deleted and started again): the uid of its `kube-system` namespace. None when it
    cannot be read (then nothing is judged stale)."""
    api = cluster.api_client()
    try:
        found = client.CoreV1Api(api).read_namespace("kube-system", _request_timeout=(3, 10))
    except (client.ApiException, urllib3.exceptions.HTTPError, OSError):
        return None  # only means "unknown"
    finally:
        api.close()
    return str(found.metadata.uid) if found.metadata and found.metadata.uid else None


def claim_for_cluster(directory: Path, uid: str | None, stop: Callable[[], object]) -> bool:
    """Bind a state directory (held under `state_lock`) to the cluster `uid`. State left by
    another cluster of the same name — processes with its tokens and certificates — is
    stopped (`stop`) and wiped first. True when something stale was dropped."""
    known = read_settings(directory).get(CLUSTER_UID_KEY)
    stale = uid is not None and known is not None and known != uid
    if stale:
        stop()
        for entry in directory.iterdir():
            if entry.name == ".lock":
                continue
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)
    if uid is not None and known != uid:
        settings = read_settings(directory)
        settings[CLUSTER_UID_KEY] = uid
        save_settings(directory, settings)
    return stale


def read_record(path: Path, kind: type[T]) -> T | None:
    """The dataclass `kind` recorded in `path` (keys it does not have are ignored); None when
    there is none or it is not one."""
    try:
        data = json.loads(path.read_text())
        known = {f.name for f in dataclasses.fields(kind)}  # type: ignore[arg-type]
        return kind(**{k: v for k, v in data.items() if k in known})
    except (OSError, ValueError, TypeError, AttributeError):
        return None


def write_record(path: Path, record: Any) -> None:
    write_json(path, dataclasses.asdict(record))


# -- ports ------------------------------------------------------------------------------------


# -- processes --------------------------------------------------------------------------------

# Popen objects of the processes this Python process started: polling them reaps zombies.
_CHILDREN: dict[int, subprocess.Popen[bytes]] = {}
_CHILDREN_LOCK = threading.Lock()


def pid_alive(pid: int, marker: bytes) -> bool:
    """A live, non-zombie process whose command line contains `marker`."""
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
    return state != "Z" and marker in cmdline


def caller_env() -> dict[str, str]:
    """This process's environment without the caller's cluster settings."""
    return {k: v for k, v in os.environ.items() if k not in CALLER_CLUSTER_ENV}


def start_session(
    args: list[str], log: Path, env: dict[str, str], *, cwd: Path | None = None
) -> int:
    """Start `args` in a session of its own (it outlives the command that started it and does
    not receive the terminal's Ctrl-C), its output appended to `log`; its pid."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with outputfile.open_append(log) as out:
        out.write(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} starting: {' '.join(args)}\n".encode())
        out.flush()
        child = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=cwd,
            start_new_session=True,
        )
    with _CHILDREN_LOCK:
        _CHILDREN[child.pid] = child
    return child.pid


def signal_group(pid: int, sig: int) -> None:
    """Signal the process and its group (SIGKILL: the group; else the leader, which forwards)."""
    try:
        if sig == signal.SIGKILL:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def group_alive(pgid: int) -> bool:
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


def stop_session(
    pid: int,
    alive: Callable[[], bool],
    *,
    what: str,
    kill: bool = False,
    timeout: float,
    poll: float,
) -> None:
    """SIGTERM (graceful) or SIGKILL the session `pid` leads, then wait until it and its group
    are gone. A graceful stop that overruns the timeout is finished with SIGKILL; `what` names
    the process in the error of one that survives even that."""
    if not alive():
        return
    signal_group(pid, signal.SIGKILL if kill else signal.SIGTERM)

    def gone() -> bool:
        return not (alive() or group_alive(pid))

    if not kill and kube_wait.poll(gone, deadline=timeout, interval=poll)[0]:
        return
    if not kill:
        signal_group(pid, signal.SIGKILL)
    if not kube_wait.poll(gone, deadline=timeout, interval=poll)[0]:
        raise CompareError(f"{what} {pid} survived SIGKILL")
