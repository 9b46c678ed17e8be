"""The embedded cluster's component ports (compare.cluster.embedded): picked by the toolkit,
reserved across its processes (compare.cluster.ports), never one another cluster's
configuration names, and a component that lost its port named at once from its log."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

import pytest
import yaml

from compare.cluster import ports
from compare.cluster.embedded import BIND_FAILURE, PORT_OPTIONS, EmbeddedCluster, kwokctl_config


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("COMPARE_CACHE_DIR", str(tmp_path))
    return tmp_path


def test_kwokctl_is_given_every_port_it_would_pick_itself(cache: Path) -> None:
    ports = EmbeddedCluster("one")._pick_ports(given=None)
    assert sorted(ports) == sorted(PORT_OPTIONS) and len(set(ports.values())) == len(ports)
    options = yaml.safe_load(kwokctl_config(ports=ports))["options"]
    assert options == {"bindAddress": "127.0.0.1", **ports}
    # The API server's port chosen by the user (--port) is kwokctl's flag, not picked.
    assert "kubeApiserverPort" not in EmbeddedCluster("one")._pick_ports(given=6443)


def test_no_port_another_clusters_configuration_names_is_picked(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = cache / "kwok" / "clusters" / "other"
    other.mkdir(parents=True)
    taken = {option: 21000 + i for i, option in enumerate(PORT_OPTIONS)}
    config = {"kind": "KwokctlConfiguration", "options": taken}
    (other / "kwok.yaml").write_text(yaml.safe_dump_all([config]))
    # Every pick tried first among the other cluster's ports: each one is passed over.
    asked: list[set[int]] = []

    def free_port(*, avoid: set[int]) -> int:
        asked.append(set(avoid))
        return 30000 + len(asked)

    monkeypatch.setattr("compare.cluster.embedded.free_port", free_port)
    EmbeddedCluster("new")._pick_ports(given=None)
    assert asked and all(avoid == set(taken.values()) for avoid in asked)


def test_a_component_that_exited_on_a_taken_port_is_named(cache: Path) -> None:
    embedded = EmbeddedCluster("lost")
    (embedded.cluster_dir / "pids").mkdir(parents=True)
    (embedded.cluster_dir / "logs").mkdir()
    assert embedded.lost_port() is None  # nothing started yet
    dead = 2**22 + 1  # above any pid the kernel hands out by default: never a live process
    assert not Path(f"/proc/{dead}").exists()
    (embedded.cluster_dir / "pids" / "etcd.pid").write_text(str(dead))
    (embedded.cluster_dir / "logs" / "etcd.log").write_text("starting\nready to serve\n")
    assert embedded.lost_port() is None  # exited, but not for its port
    line = f'{{"level":"fatal","error":"listen tcp 127.0.0.1:32766: bind: {BIND_FAILURE}"}}'
    with open(embedded.cluster_dir / "logs" / "etcd.log", "a") as log:
        log.write(f"{line}\nexiting\n")
    assert embedded.lost_port() == f"etcd exited at start: {line}"
    (embedded.cluster_dir / "pids" / "etcd.pid").write_text(str(os.getpid()))
    # A live pid that is not this cluster's etcd counts as not running either.
    assert embedded.lost_port() == f"etcd exited at start: {line}"


def test_a_ledger_lock_held_by_a_stuck_process_is_not_waited_for(
    cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ports, "_LOCK_WAIT_S", 0.2)
    ports.ledger_path().parent.mkdir(parents=True, exist_ok=True)
    with open(ports.ledger_path().with_suffix(".lock"), "a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)  # another open file description: a second holder
        started = time.monotonic()
        port = ports.free_port()
        assert time.monotonic() - started < 5 and port > 0
    assert not ports.ledger_path().exists()  # nothing written without the lock
