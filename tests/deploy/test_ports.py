"""Ports for the local processes: free on every address, outside the kernel's ephemeral range,
never handed out twice, within a process or across processes (compare.cluster.ports); a
process that lost its port is told apart from other failures."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compare.cluster.ports import ledger_path
from compare.deploy.local import free_port
from compare.deploy.processes import LocalProcess, alive, port_taken, spawn


def _ephemeral_low() -> int:
    return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])


def test_ports_are_below_the_ephemeral_range_and_distinct() -> None:
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(port < _ephemeral_low() for port in ports)


def test_a_preferred_port_is_kept_when_free_and_replaced_when_taken() -> None:
    first = free_port()
    assert free_port(first) == first
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as held:
        # Taken on one address only: a listener on every address could not start there.
        held.bind(("127.0.0.1", first))
        held.listen()
        assert free_port(first) != first


# Each child seeds Python's random generator alike, so without a reservation shared by the
# processes every one of them would pick the very same ports.
_CHILD = """
import random, sys
random.seed(42)
from compare.cluster.ports import free_port
print(" ".join(str(free_port()) for _ in range(int(sys.argv[1]))))
"""


def test_processes_asking_at_the_same_moment_never_get_the_same_port(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPARE_CACHE_DIR", str(tmp_path))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _CHILD, "5"], env=env, stdout=subprocess.PIPE, text=True
        )
        for _ in range(4)
    ]
    try:
        ports = [int(p) for child in children for p in child.communicate(timeout=60)[0].split()]
    finally:
        for child in children:
            child.kill()  # a no-op for those that ended; none is left behind on a timeout
            child.wait(timeout=10)
    assert all(child.returncode == 0 for child in children)
    assert len(ports) == 20 and len(set(ports)) == 20
    # Each is reserved in the ledger for the process it was handed to.
    held = json.loads(ledger_path().read_text())
    assert {int(port) for port in held} == set(ports)
    assert len({pid for _, pid in held.values()}) == 4


def test_a_preferred_port_is_reserved_anew_and_lapsed_reservations_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMPARE_CACHE_DIR", str(tmp_path))
    mine = free_port()
    held = json.loads(ledger_path().read_text())
    theirs = mine + 1 if mine + 1 < _ephemeral_low() else mine - 1
    # An earlier process's port (a chart server's, which the cluster's objects name): its
    # owner asking for it again gets it, and the reservation is its process's now.
    held[str(theirs)] = [time.time() + 60, os.getppid()]
    held[str(mine + 2)] = [time.time() - 1, os.getppid()]  # lapsed: free again
    ledger_path().write_text(json.dumps(held))
    assert free_port(theirs) == theirs
    held = json.loads(ledger_path().read_text())
    assert held[str(theirs)][1] == os.getpid() and str(mine + 2) not in held
    # None left below the ephemeral range: the kernel's pick.
    assert free_port(avoid=range(20000, _ephemeral_low())) >= _ephemeral_low()
    # A torn ledger (a crash mid-write) is started afresh, never an error.
    ledger_path().write_text('{"123": [1')
    assert free_port() not in (mine, theirs)
    assert len(json.loads(ledger_path().read_text())) == 1


def _exits_with(directory: Path, name: str, message: str) -> LocalProcess:
    code = f"import sys; print({message!r}); sys.exit(1)"
    info = spawn(directory, name, [sys.executable, "-c", code], marker=code, ready_url="")
    deadline = time.monotonic() + 10
    while alive(info) and time.monotonic() < deadline:
        time.sleep(0.05)
    return info


def test_a_process_that_lost_its_port_is_told_apart(tmp_path: Path) -> None:
    lost = _exits_with(tmp_path, "lost", "listen tcp 0.0.0.0:4242: bind: address already in use")
    other = _exits_with(tmp_path, "other", "error: flag provided but not defined: -x")
    assert port_taken(lost)
    assert not port_taken(other)
