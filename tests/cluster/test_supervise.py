"""The local operator's supervisor, run as a real process over small child scripts.

A child that cannot start is given up on after three quick failures; a child that lost its
Lease is restarted however soon it exits, as the kubelet restarts a container.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from compare.deploy.supervise import QUICK_FAILURES
from webapp_operator.names import EXIT_LEASE_LOST


def _child(tmp_path: Path, codes: list[int]) -> list[str]:
    """A child that exits with `codes[n]` on its n-th start (counted in a file), then 0."""
    counter = tmp_path / "starts"
    script = tmp_path / "child.py"
    script.write_text(
        "import pathlib, sys\n"
        f"counter = pathlib.Path({str(counter)!r})\n"
        "n = int(counter.read_text()) if counter.exists() else 0\n"
        "counter.write_text(str(n + 1))\n"
        f"codes = {codes!r}\n"
        "sys.exit(codes[n] if n < len(codes) else 0)\n"
    )
    return [sys.executable, str(script)]


def _supervise(child: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "compare.deploy.supervise", "--first-delay", "0.05", "--", *child],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _starts(tmp_path: Path) -> int:
    return int((tmp_path / "starts").read_text())


def test_a_child_that_cannot_start_is_given_up_on(tmp_path: Path) -> None:
    done = _supervise(_child(tmp_path, [1] * 10))
    assert done.returncode == 1
    assert _starts(tmp_path) == QUICK_FAILURES
    assert "giving up" in done.stdout


def test_a_child_that_lost_its_lease_is_restarted_however_soon(tmp_path: Path) -> None:
    # More quick exits than the give-up count: each one lost the Lease, none is a failed start.
    lost = [EXIT_LEASE_LOST] * QUICK_FAILURES
    done = _supervise(_child(tmp_path, lost))
    assert done.returncode == 0, done.stdout
    assert _starts(tmp_path) == QUICK_FAILURES + 1
    assert done.stdout.count("(it lost its Lease)") == QUICK_FAILURES


def test_a_lost_lease_between_failed_starts_resets_the_count(tmp_path: Path) -> None:
    done = _supervise(_child(tmp_path, [1, 1, EXIT_LEASE_LOST, 1]))
    assert done.returncode == 0, done.stdout
    assert _starts(tmp_path) == 5


def test_a_bad_first_delay_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "compare.deploy.supervise", "--first-delay", "x", "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2 and "--first-delay SECONDS" in done.stderr
