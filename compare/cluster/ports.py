"""Free TCP ports for the toolkit's local listeners, never handed out twice - within a process
or across processes.

A port is free when a socket can bind it on every address; it is taken only when its listener
starts, a moment (or, for a cluster's component started by kwokctl, seconds) later. Two
`compare` processes asking at the same moment could both find the same port free, and the
second listener then fails ("address already in use": two `compare cluster up` once gave
their etcd the same port). So every port handed out is recorded, under a file lock, in a
ledger in the toolkit's cache shared by its processes (`<cache>/ports/handed.json`: port ->
when the reservation ends, which process made it), and no other process is handed it while
the reservation holds (`RESERVE_S`, long enough for any listener to start; by then a bound
port is no longer free anyway).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import random
import socket
import threading
import time
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import IO

from compare.paths import cache_dir

# How long a port handed out stays reserved for the process that asked for it.
RESERVE_S = 300.0
# Below the kernel's ephemeral range: a port picked there cannot be taken, between the check
# and the listener's start, by the local end of an outgoing connection.
_FIXED_LOW = 20000
_BIND_TRIES = 200
# Ports handed out by this process (a port is taken only when its listener starts).
_HANDED: set[int] = set()
_HANDED_LOCK = threading.Lock()


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _bindable(port: int) -> bool:
    # 0.0.0.0 conflicts with a listener or a connection on any local address: some
    # controllers (Argo CD's metrics) listen on every address, not on loopback alone.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("0.0.0.0", port))
        except OSError:
            return False
    return True


def ledger_path() -> Path:
    """The ledger of the ports handed out by every process of the toolkit (see the module)."""
    return cache_dir() / "ports" / "handed.json"


# The ledger's lock is held for a few milliseconds; a holder stuck past this is not waited for.
_LOCK_WAIT_S = 10.0


def _locked(lock: IO[str]) -> bool:
    """Take the ledger's lock, polling, for at most `_LOCK_WAIT_S`."""
    deadline = time.monotonic() + _LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        except OSError:
            return False


@contextlib.contextmanager
def _ledger() -> Iterator[dict[int, tuple[float, int]]]:
    """The live reservations (port -> (until, pid)), under the ledger's file lock; what the
    block leaves in the mapping is written back."""
    path = ledger_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        lock = open(path.with_suffix(".lock"), "a")  # noqa: SIM115 - closed below
    except OSError:
        # No cache to write to (read-only): this process's own record only.
        yield {}
        return
    with lock:
        if not _locked(lock):
            # Held too long by another process (stopped, hung): reservations are advisory.
            yield {}
            return
        try:
            now = time.time()
            try:
                held = {
                    int(port): (float(until), int(pid))
                    for port, (until, pid) in json.loads(path.read_text()).items()
                    if float(until) > now
                }
            except (OSError, ValueError, TypeError, AttributeError):
                held = {}  # none yet, or torn by a crash: reservations are advisory
            yield held
            tmp = path.with_name(f".{path.name}.{os.getpid()}")
            with contextlib.suppress(OSError):  # a full disk: the reservation is advisory
                tmp.write_text(json.dumps({str(p): list(v) for p, v in sorted(held.items())}))
                os.replace(tmp, path)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def free_port(prefer: int | None = None, *, avoid: Collection[int] = ()) -> int:
    """A free TCP port: `prefer` when it is free (a listener's own port of before, which
    objects of the cluster name: a reservation of it by an earlier process is its own), else
    one below the kernel's ephemeral range that no process of the toolkit was handed within
    `RESERVE_S` and not in `avoid` (the kernel's pick when none is found); reserved for this
    process."""
    pid = os.getpid()
    with _HANDED_LOCK, _ledger() as held:

        def take(port: int) -> int:
            _HANDED.add(port)
            held[port] = (time.time() + RESERVE_S, pid)
            return port

        if prefer is not None and _bindable(prefer):
            return take(prefer)
        high = _ephemeral_low() - 1
        if high - _FIXED_LOW >= 1000:
            for _ in range(_BIND_TRIES):
                port = random.randint(_FIXED_LOW, high)
                taken = port in _HANDED or port in held or port in avoid
                if not taken and _bindable(port):
                    return take(port)
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            picked: int = sock.getsockname()[1]
            return take(picked)
