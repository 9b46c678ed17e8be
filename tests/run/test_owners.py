"""Whether a run's process is gone, from what its namespaces record (`compare.run.owners`):
a process id that no longer exists, or that now names a process started at another time,
is a dead run; another host's run cannot be told and is never called dead."""

from __future__ import annotations

import os
import socket
import subprocess

from compare.run.owners import (
    ALIVE,
    DEAD,
    KEPT,
    OWNER_HOST,
    OWNER_PID,
    OWNER_STARTED,
    UNKNOWN,
    owner_annotations,
    owner_state,
    process_start,
)


def test_this_process_is_alive() -> None:
    notes = owner_annotations()
    assert notes[OWNER_PID] == str(os.getpid())
    assert notes[OWNER_HOST] == socket.gethostname()
    assert notes[OWNER_STARTED] == process_start(os.getpid())
    assert KEPT not in notes
    assert owner_state(notes) == ALIVE


def test_a_process_that_ended_is_dead() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    assert process_start(child.pid) is None
    notes = {**owner_annotations(), OWNER_PID: str(child.pid)}
    assert owner_state(notes) == DEAD


def test_a_reused_process_id_is_dead() -> None:
    # The id names a live process, started at another time than the run's.
    notes = {**owner_annotations(), OWNER_STARTED: "another-boot:1"}
    assert owner_state(notes) == DEAD


def test_another_hosts_run_or_none_recorded_cannot_be_told() -> None:
    assert owner_state({**owner_annotations(), OWNER_HOST: "elsewhere.example"}) == UNKNOWN
    assert owner_state({}) == UNKNOWN
    assert owner_state(None) == UNKNOWN
    assert owner_state({**owner_annotations(), OWNER_PID: "not-a-pid"}) == UNKNOWN


def test_a_kept_run_says_so() -> None:
    assert owner_annotations(keep=True)[KEPT] == "true"
