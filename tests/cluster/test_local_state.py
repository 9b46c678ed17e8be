"""A local state directory belongs to one cluster: `claim_for_cluster` drops what an earlier
cluster of the same name left (its processes stopped, its files removed) and keeps the rest."""

from __future__ import annotations

import json
from pathlib import Path

from compare.deploy.local import CLUSTER_UID_KEY, claim_for_cluster, state_lock


def _state(directory: Path) -> None:
    (directory / "settings.json").write_text(json.dumps({CLUSTER_UID_KEY: "old", "port": 1}))
    (directory / "token").write_text("secret")
    (directory / "certs").mkdir()
    (directory / "certs" / "ca.crt").write_text("ca")


def test_state_of_another_cluster_is_stopped_and_wiped(tmp_path: Path) -> None:
    stops: list[str] = []
    with state_lock(tmp_path / "c") as directory:
        _state(directory)
        assert claim_for_cluster(directory, "new", lambda: stops.append("stopped")) is True
        assert stops == ["stopped"]
        assert sorted(p.name for p in directory.iterdir()) == [".lock", "settings.json"]
        assert json.loads((directory / "settings.json").read_text()) == {CLUSTER_UID_KEY: "new"}


def test_state_of_this_cluster_is_kept(tmp_path: Path) -> None:
    stops: list[str] = []
    with state_lock(tmp_path / "c") as directory:
        _state(directory)
        assert claim_for_cluster(directory, "old", lambda: stops.append("stopped")) is False
        assert stops == []
        assert (directory / "token").read_text() == "secret"
        assert json.loads((directory / "settings.json").read_text())["port"] == 1


def test_an_unknown_cluster_judges_nothing_stale(tmp_path: Path) -> None:
    stops: list[str] = []
    with state_lock(tmp_path / "c") as directory:
        _state(directory)
        assert claim_for_cluster(directory, None, lambda: stops.append("stopped")) is False
        assert stops == [] and (directory / "certs" / "ca.crt").exists()


def test_a_first_claim_records_the_cluster(tmp_path: Path) -> None:
    with state_lock(tmp_path / "c") as directory:
        (directory / "settings.json").write_text(json.dumps({"port": 2}))
        assert claim_for_cluster(directory, "uid-1", lambda: None) is False
        settings = json.loads((directory / "settings.json").read_text())
        assert settings == {"port": 2, CLUSTER_UID_KEY: "uid-1"}
