"""Waiting until a desired state holds, by watching instead of polling.

A list+watch of the namespace (`compare.judge.watch`) judges every change as it arrives, so a
wait returns the moment the state holds and a long wait costs the API server nothing but the
watch. Used by the deploy waits and the chaostoolkit probe `wait_for_desired_state`.
"""

from __future__ import annotations

import threading
import time

from kubernetes import client

from compare.judge.desired import DesiredObjects
from compare.judge.reading import Reading
from compare.judge.verdict import problems
from compare.judge.watch import NamespaceWatch

TICK_S = 0.25  # how often a wait looks at its cancel event
# How long a heal must keep holding to count (the judge's default `--settle`).
DEFAULT_SETTLE_S = 1.0


def wait_until_holds(
    api: client.ApiClient,
    namespace: str,
    desired: DesiredObjects,
    *,
    timeout: float,
    settle: float = 0.0,
    cancel: threading.Event | None = None,
) -> list[str]:
    """Block until the desired state holds (returns []) or `timeout` passes (returns what
    still differs). Raises the API error when the namespace cannot be listed, and
    InterruptedError when `cancel` is set.

    With `settle`, the state must also keep holding that long, as the trial's judge demands
    of a heal: a rollout that is complete for an instant and then not (an old pod still
    terminating) is not back yet. A settle period that began before `timeout` may end after
    it, as the judge's does."""
    changed = threading.Condition()
    latest: list[list[str]] = []

    def judge(_received: float, reading: Reading, _what: str) -> None:
        found = problems(desired, reading)
        with changed:
            latest[:] = [found]
            changed.notify_all()

    watch = NamespaceWatch(api, namespace, on_change=judge, kinds=desired.kinds)
    first = problems(desired, watch.start())
    deadline = time.monotonic() + timeout
    holds_since: float | None = None
    try:
        with changed:
            if not latest:
                latest.append(first)
            while True:
                now = time.monotonic()
                if latest[0]:
                    holds_since = None
                    if now >= deadline:
                        break
                    until = deadline
                else:
                    holds_since = now if holds_since is None else holds_since
                    if now - holds_since >= settle:
                        break
                    until = holds_since + settle
                if cancel is not None and cancel.is_set():
                    raise InterruptedError(f"waiting for {namespace}: cancelled")
                changed.wait(max(min(until - now, TICK_S), 0.0))
            return list(latest[0])
    finally:
        watch.stop()
