"""Ports for the local processes: free on every address, outside the kernel's ephemeral range,
never handed out twice; a process that lost its port is told apart from other failures."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

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
