"""A sampling profiler for the operator process, for benchmarks only (no py-spy here).

`bench/operator_scale.py --profile FILE` puts this directory on the operator's PYTHONPATH
with `OPERATOR_SAMPLE_FILE=FILE`; Python imports `sitecustomize` at start-up, and in the
operator's process (not its supervisor) a daemon thread then records, every
`OPERATOR_SAMPLE_MS` (10) milliseconds, the Python stack of every other thread, and every
10 s writes FILE: per thread group (the event loop, the reconcile threads, the rest) its CPU
seconds (from /proc, exact) and its sampled stacks, collapsed (`frame;frame;... count`, the
flame-graph format). A stack whose innermost frame waits (select, a lock, a socket read) is
a thread that is idle or waiting on the API server, not one using the CPU. Samples are
biased towards calls that release the GIL (zlib, ssl, select): the sampler runs only then. So
the event loop's thread is also profiled exactly (cProfile): each SIGUSR2 writes what it
recorded so far to FILE.N.pstats (N = 1, 2, ...).
"""

from __future__ import annotations

import cProfile
import json
import os
import signal
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from types import FrameType


def _group(name: str) -> str:
    if name == "MainThread":
        return "loop"
    if name.startswith("reconcile"):
        return "reconcile"
    return name.rstrip("0123456789_-") or name


def _frame(code: object) -> str:
    filename = getattr(code, "co_filename", "?")
    parts = Path(filename).parts
    short = "/".join(parts[-2:]) if len(parts) > 1 else filename
    return f"{short}:{getattr(code, 'co_name', '?')}"


def _cpu_by_thread() -> dict[int, float]:
    ticks = os.sysconf("SC_CLK_TCK")
    cpu: dict[int, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        cpu[int(task.name)] = (int(fields[11]) + int(fields[12])) / ticks
    return cpu


def _run(path: Path, interval: float) -> None:
    me = threading.get_ident()
    threading.current_thread().name = "sampler"
    stacks: Counter[str] = Counter()
    samples = 0
    names: dict[int, str] = {}  # native thread id -> group, for the CPU figures
    cpu_done: dict[str, float] = {}  # CPU of threads that ended
    last_cpu: dict[int, float] = {}
    last_write = time.monotonic()
    while True:
        time.sleep(interval)
        threads = {t.ident: t for t in threading.enumerate()}
        for ident, frame in sys._current_frames().items():
            if ident == me:
                continue
            thread = threads.get(ident)
            group = _group(thread.name if thread is not None else "?")
            if thread is not None and thread.native_id is not None:
                names[thread.native_id] = group
            chain = []
            walk: FrameType | None = frame
            while walk is not None:
                chain.append(_frame(walk.f_code))
                walk = walk.f_back
            stacks[group + ";" + ";".join(reversed(chain))] += 1
        samples += 1
        if time.monotonic() - last_write >= 10.0:
            last_write = time.monotonic()
            now_cpu = _cpu_by_thread()
            for tid, seconds in last_cpu.items():
                if tid not in now_cpu:
                    group = names.get(tid, "?")
                    cpu_done[group] = cpu_done.get(group, 0.0) + seconds
            last_cpu = now_cpu
            cpu = dict(cpu_done)
            for tid, seconds in now_cpu.items():
                group = names.get(tid, "?")
                cpu[group] = cpu.get(group, 0.0) + seconds
            tmp = path.with_suffix(".tmp")
            tmp.write_text(
                json.dumps(
                    {
                        "samples": samples,
                        "interval_s": interval,
                        "cpu_s_by_group": dict(cpu),
                        "stacks": dict(stacks.most_common()),
                    }
                )
            )
            tmp.replace(path)


def _start() -> None:
    target = os.environ.get("OPERATOR_SAMPLE_FILE")
    if not target or "webapp_operator" not in sys.orig_argv:
        return
    interval = float(os.environ.get("OPERATOR_SAMPLE_MS", "10")) / 1000
    profile = cProfile.Profile()
    dumps = [0]

    def dump(signum: int, frame: object) -> None:
        dumps[0] += 1
        profile.disable()
        profile.dump_stats(f"{target}.{dumps[0]}.pstats")
        profile.enable()

    signal.signal(signal.SIGUSR2, dump)
    profile.enable()
    threading.Thread(
        target=_run, args=(Path(target), interval), name="sampler", daemon=True
    ).start()


_start()
