"""Handing freed memory back to the operating system, periodically (glibc's `malloc_trim`).

CPython frees objects into the C library's heap, which keeps the pages: after a burst (a
thousand WebApps created at once, each with its events, patches and JSON bodies) the process
stays at its high-water mark although most of it is free. `malloc_trim(0)` returns the free
pages (glibc >= 2.8 releases them anywhere in the heap, not only at its top). It takes a few
milliseconds on the operator's heap, so it runs from a thread of its own every few seconds.
On a C library without it (musl) nothing is done.

`freeze_startup_heap` is the other half: what start-up built (every imported module, kopf's
registry, the client; about 67,000 objects) is moved out of the garbage collector's sight
once the operator is ready, so a full collection walks only what the WebApps brought. A full
collection runs on the event loop, and with 1,000 WebApps each one stalled it for
100-390 ms.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import gc
import logging
from collections.abc import Callable

from webapp_operator.periodic import Periodic

__all__ = ["MemoryTrimmer", "freeze_startup_heap", "malloc_trim"]

logger = logging.getLogger(__name__)


def malloc_trim() -> Callable[[], int] | None:
    """The C library's `malloc_trim(0)`, or None where there is none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int

    def call() -> int:
        return int(trim(0))

    return call


def freeze_startup_heap() -> int:
    """Collect start-up's garbage, then move every object still alive to the collector's
    permanent generation (`gc.freeze`): never walked again, never freed. The number frozen."""
    gc.collect()
    gc.freeze()
    return gc.get_freeze_count()


class MemoryTrimmer(Periodic):
    """Calls `trim` every `interval` seconds from a daemon thread until `stop()`."""

    name = "malloc-trim"

    def __init__(self, interval: float, trim: Callable[[], int] | None = None) -> None:
        super().__init__(interval)
        self._trim = trim if trim is not None else malloc_trim()
        self.calls = 0

    @property
    def available(self) -> bool:
        return self._trim is not None and self.interval > 0

    def tick(self) -> bool:
        assert self._trim is not None
        try:
            self._trim()
        except Exception:  # never fatal: memory is returned later, or not at all
            logger.exception("malloc_trim failed")
            return False
        self.calls += 1
        return True
