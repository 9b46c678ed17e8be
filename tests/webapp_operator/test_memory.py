"""The periodic malloc_trim (`webapp_operator.memory`): found on this C library, it hands
freed heap pages back (RSS falls), and the trimmer thread calls it until stopped; start-up's
heap frozen out of the collector's walks. No cluster."""

from __future__ import annotations

import gc
import json
import threading
import time
import weakref

from webapp_operator.memory import MemoryTrimmer, freeze_startup_heap, malloc_trim


def _rss_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmRSS")


def test_malloc_trim_returns_freed_heap_pages() -> None:
    trim = malloc_trim()
    assert trim is not None, "glibc has malloc_trim"
    # Free heap the tests before left (in a whole-suite run) is handed back first: else the
    # burst below reuses it and the process's RSS does not grow.
    gc.collect()
    trim()
    before = _rss_mib()
    # A burst of JSON bodies, a few kept: the survivors pin the heap's top, so freeing the
    # rest returns nothing by itself (what a burst of WebApps leaves behind).
    kept: list[object] = []
    junk: list[str] = []
    for i in range(20_000):
        body = json.dumps({"a": "x" * 2000, "i": i, "l": list(range(50))})
        junk.append(body)
        if i % 50 == 0:
            kept.append(json.loads(body))
    high = _rss_mib()
    junk.clear()
    freed = _rss_mib()
    trim()
    trimmed = _rss_mib()
    assert high - before > 20, (before, high)
    assert trimmed < freed - 20, (before, high, freed, trimmed)
    assert kept


def test_the_trimmer_calls_until_stopped() -> None:
    called = threading.Event()
    calls: list[int] = []

    def fake() -> int:
        calls.append(1)
        if len(calls) >= 3:
            called.set()
        return 1

    trimmer = MemoryTrimmer(0.01, fake)
    assert trimmer.available
    trimmer.start()
    assert called.wait(5)
    trimmer.stop()
    stopped_at = len(calls)
    assert trimmer.calls >= 3
    called.clear()
    assert not called.wait(0.1) and len(calls) == stopped_at


def test_a_zero_interval_disables_it() -> None:
    trimmer = MemoryTrimmer(0, lambda: 1)
    assert not trimmer.available
    trimmer.start()
    trimmer.stop()
    assert trimmer.calls == 0


class _Cycle:
    def __init__(self) -> None:
        self.me = self


def _full_collection_s() -> float:
    start = time.perf_counter()
    gc.collect()
    return time.perf_counter() - start


def test_freezing_collects_start_up_garbage_then_hides_the_survivors() -> None:
    gc.collect()
    # What start-up leaves: a large live heap, and some cyclic garbage.
    alive = [{"k": [i, str(i)]} for i in range(200_000)]
    garbage = [weakref.ref(_Cycle()) for _ in range(100)]
    before = _full_collection_s()
    try:
        frozen = freeze_startup_heap()
        assert frozen >= len(alive)
        # The cycles were collected first, not frozen forever.
        assert all(ref() is None for ref in garbage)
        after = _full_collection_s()
        # A full collection no longer walks the 400,000 frozen objects.
        assert after < before / 4, (before, after)
    finally:
        gc.unfreeze()
    assert gc.get_freeze_count() == 0
