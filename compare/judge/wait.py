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


def wait_until_holds(
    api: client.ApiClient,
    namespace: str,
    desired: DesiredObjects,
    *,
    timeout: float,
    cancel: threading.Event | None = None,
) -> list[str]:
    """Block until the desired state holds (returns []) or `timeout` passes (returns what
    still differs). Raises the API error when the namespace cannot be listed, and
    InterruptedError when `cancel` is set."""
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
    try:
        with changed:
            if not latest:
                latest.append(first)
            while latest[0]:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if cancel is not None and cancel.is_set():
                    raise InterruptedError(f"waiting for {namespace}: cancelled")
                changed.wait(min(left, TICK_S))
            return list(latest[0])
    finally:
        watch.stop()
