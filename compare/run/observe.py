"""The observer: tight polling of the live state around the injection, in its own thread.

It reads a snapshot every `interval` seconds (the readings' own start and end times are what
the verdict uses, so a slow reading widens the recorded resolution instead of hiding time). It
is told the injection instant the moment chaoslib finishes the injection activity, takes a
reading right away, and stops at the first reading that shows the fault healed or when the
heal window has passed. There is no other waiting: nothing sleeps a fixed time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from kubernetes import client

from compare.chaos.state import Snapshot, read_snapshot
from compare.run.evidence import Judge, Observation
from compare.webapp import DesiredState

# Consecutive failed readings after which the trial is abandoned (the cluster is gone).
MAX_READ_ERRORS = 20


class Observer(threading.Thread):
    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        desired: DesiredState,
        judge: Judge,
        *,
        interval: float,
        window: float,
        cancel: threading.Event,
        read: Callable[..., Snapshot] = read_snapshot,
    ) -> None:
        super().__init__(name=f"observe-{namespace}", daemon=True)
        self.api = api
        self.namespace = namespace
        self.desired = desired
        self.judge = judge
        self.interval = interval
        self.window = window
        self.cancel = cancel
        self.read = read
        self.observations: list[Observation] = []
        self.last: Snapshot | None = None
        self.errors: list[str] = []
        self._injected_at: float | None = None
        self._experiment_over = False
        self._wake = threading.Event()

    @property
    def injected_at(self) -> float | None:
        return self._injected_at

    def injected(self, at: float) -> None:
        """The injection activity returned at `at` (time.time()): read right away."""
        self._injected_at = at
        self._wake.set()

    def experiment_over(self) -> None:
        """chaoslib is done; without an injection there is nothing left to observe."""
        self._experiment_over = True
        self._wake.set()

    def run(self) -> None:
        failures = 0
        while not self.cancel.is_set():
            tick = time.monotonic()
            # Cleared before the reading: an injection during it makes the wait below return.
            self._wake.clear()
            try:
                snap = self.read(self.api, self.namespace, self.desired, pods_if_needed=True)
            except Exception as exc:  # reported in the trial's error, polling goes on
                failures += 1
                self.errors.append(_first_line(exc))
                if failures >= MAX_READ_ERRORS:
                    return
            else:
                failures = 0
                self.last = snap
                obs = self.judge.observe(snap)
                self.observations.append(obs)
                if self._done(obs):
                    if not obs.healed:
                        self._complete_last()
                    return
            injected = self._injected_at
            if injected is None and self._experiment_over:
                return
            if injected is not None and time.time() > injected + self.window:
                self._complete_last()
                return
            # Wait out the rest of the interval; an injection wakes the loop at once.
            self._wake.wait(max(self.interval - (time.monotonic() - tick), 0.0))

    def _complete_last(self) -> None:
        """The evidence at the end needs every object: read them all once more if needed."""
        if not self.observations or not self.observations[-1].partial:
            return
        try:
            snap = self.read(self.api, self.namespace, self.desired)
        except Exception as exc:
            self.errors.append(_first_line(exc))
            return
        self.last = snap
        self.observations.append(self.judge.observe(snap))

    def _done(self, obs: Observation) -> bool:
        injected = self._injected_at
        return (
            injected is not None
            and obs.started >= injected
            and (obs.healed or obs.at > injected + self.window)
        )


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__
