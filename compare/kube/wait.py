"""Waiting with a deadline: the one loop every wait of the toolkit runs.

A wait looks (`check`), decides (`done`), and past its deadline raises the caller's error built
from the last look, so the message names what was still missing. Between looks it sleeps one
interval, cut short by a cancel event (Ctrl-C in a run). fluxcd/pkg's `ssa` ResourceManager
keeps Wait and WaitForTermination in one place for the same reason: no caller writes its own
deadline loop, so none forgets the deadline or the cancel event.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from compare.errors import CompareError

T = TypeVar("T")

POLL_S = 0.1


class WaitCancelled(CompareError):
    """The caller's cancel event was set during a wait."""


class Deadline:
    """`timeout` seconds after `started` (a `time.monotonic()` value, default now): a caller
    that already spent part of its budget passes its start, and its errors name the whole
    budget."""

    def __init__(self, timeout: float, *, started: float | None = None) -> None:
        self.timeout = timeout
        self.started = time.monotonic() if started is None else started
        self.at = self.started + timeout

    def passed(self) -> bool:
        return time.monotonic() > self.at

    def remaining(self, floor: float = 0.0) -> float:
        """Seconds left, at least `floor` (a last look when the budget is nearly spent)."""
        return max(self.at - time.monotonic(), floor)

    def elapsed(self) -> float:
        return time.monotonic() - self.started


def sleep_unless_cancelled(cancel: threading.Event | None, seconds: float, what: str) -> None:
    """One poll interval of a wait; WaitCancelled (`<what>: cancelled`) when the caller's cancel
    event is set meanwhile."""
    if cancel is None:
        time.sleep(seconds)
    elif cancel.wait(seconds):
        raise WaitCancelled(f"{what}: cancelled")


def poll(
    check: Callable[[], T],
    *,
    deadline: Deadline | float,
    done: Callable[[T], bool] = bool,
    interval: float = POLL_S,
    cancel: threading.Event | None = None,
    what: str = "waiting",
) -> tuple[bool, T]:
    """Look until `done(look)` or the deadline passes: (whether it was done, the last look).
    A look is taken at least once, and once more after the last interval. `check` may raise
    (a failure that no waiting mends ends the wait at once)."""
    until = deadline if isinstance(deadline, Deadline) else Deadline(deadline)
    while True:
        look = check()
        if done(look):
            return True, look
        if until.passed():
            return False, look
        sleep_unless_cancelled(cancel, interval, what)


def wait_for(
    check: Callable[[], T],
    *,
    deadline: Deadline | float,
    timed_out: Callable[[T], Exception],
    done: Callable[[T], bool] = bool,
    interval: float = POLL_S,
    cancel: threading.Event | None = None,
    what: str = "waiting",
) -> T:
    """The first look that is `done` (default: truthy); past the deadline, `timed_out(last
    look)` is raised. WaitCancelled when `cancel` is set."""
    ok, look = poll(
        check, deadline=deadline, done=done, interval=interval, cancel=cancel, what=what
    )
    if not ok:
        raise timed_out(look)
    return look


def wait_until_gone(
    left: Callable[[], Sequence[str]],
    *,
    deadline: Deadline | float,
    timed_out: Callable[[Sequence[str]], Exception],
    interval: float = POLL_S,
    cancel: threading.Event | None = None,
    what: str = "waiting for a deletion",
) -> None:
    """Until `left()` (what is still there, by name) is empty; past the deadline,
    `timed_out(what is left)` is raised."""
    wait_for(
        left,
        deadline=deadline,
        timed_out=timed_out,
        done=lambda still: not still,
        interval=interval,
        cancel=cancel,
        what=what,
    )
