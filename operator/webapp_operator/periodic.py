"""A daemon thread that does one small thing every few seconds until stopped (`Periodic`):
the memory trimmer and the connection kept warm are two of them."""

from __future__ import annotations

import threading

__all__ = ["Periodic"]


class Periodic:
    """Calls `tick` every `interval` seconds from a daemon thread named `name`, until `stop()`
    or until `tick` returns False; `begin` runs once in the thread first."""

    name = "periodic"

    def __init__(self, interval: float) -> None:
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def available(self) -> bool:
        return self.interval > 0

    def start(self) -> None:
        if not self.available or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        self.begin()
        while not self._stop.wait(self.interval):
            if not self.tick():
                return

    def begin(self) -> None:
        return None

    def tick(self) -> bool:
        raise NotImplementedError
