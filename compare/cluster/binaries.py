"""The Go-built executables (control plane, kwok, helm, Flux): built once by tools/build.sh."""

from __future__ import annotations

import contextlib
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from compare.cluster.toolchain import CONTROL_PLANE, FLUX, go_status, missing_binaries
from compare.errors import CompareError
from compare.paths import IN_SOURCE_TREE, TOOLS_DIR, bin_dir, cache_dir

BINARIES = CONTROL_PLANE
# A cold build is 8-14 min on 2 cores (plus about 4 for Flux); this bounds a hung one.
BUILD_TIMEOUT_S = 3600.0

# Receives the build script's stdout as it comes (partial lines included: a step's name is
# printed when it starts, its time when it ends), and "" every second it is quiet.
Output = Callable[[str], None]


def build_logs() -> tuple[Path, Path]:
    """Where tools/build.sh and tools/flux/build.sh write the Go build's output."""
    return cache_dir() / "build.log", cache_dir() / "build-flux.log"


def ensure_binaries(*, quiet: bool = True, output: Output | None = None) -> None:
    """Build the binaries if the cache lacks them or the pinned versions changed."""
    run_build("build.sh", "the control-plane binaries", CONTROL_PLANE + FLUX, quiet, output)


def run_build(
    script: str, what: str, needs: tuple[str, ...], quiet: bool, output: Output | None = None
) -> None:
    """Run tools/<script> (it rebuilds only what its version stamp says is stale)."""
    if shutil.which("bash") is None:
        raise CompareError(f"bash is required to build {what}")
    go = go_status()
    if go.problem is not None:
        missing = missing_binaries(needs)
        if not missing:
            # Nothing can be rebuilt without Go and nothing is missing: use what is cached
            # (`compare doctor` tells whether its versions are the pinned ones).
            return
        raise CompareError(
            f"{what} are not built yet ({', '.join(missing)} missing in {bin_dir()}) and"
            f" building them needs Go: {go.problem}; then run `compare setup`"
        )
    with _tools_dir() as tools:
        args = ["bash", str(tools / script)]
        if quiet:
            args.append("--quiet")
        _run_script(args, what, output)


@contextlib.contextmanager
def _tools_dir() -> Iterator[Path]:
    """tools/ of a clone in place; an installed package's copy staged in the cache, because
    Go (GOFLAGS=-mod=mod) may update a go.sum and the installed package is never written to.
    The stamps hash the files' contents, so the staged copy reuses the cached binaries."""
    if IN_SOURCE_TREE:
        yield TOOLS_DIR
        return
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".tools-", dir=cache) as staging:
        staged = Path(staging) / "tools"
        shutil.copytree(TOOLS_DIR, staged)
        yield staged


def _run_script(args: list[str], what: str, output: Output | None) -> None:
    with tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen(
            args,
            stdout=subprocess.PIPE if output else None,
            stderr=errors,
            start_new_session=True,
        )
        try:
            _wait(proc, output, time.monotonic() + BUILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise CompareError(
                f"building {what} took longer than {BUILD_TIMEOUT_S / 60:.0f} min and was"
                f" stopped (build logs: {', '.join(map(str, build_logs()))})"
            ) from None
        except BaseException:
            _stop(proc)
            raise
        if proc.returncode != 0:
            errors.seek(0)
            text = errors.read().decode(errors="replace")
            lines = [line for line in text.strip().splitlines() if line.strip()]
            reason = lines[-1] if lines else f"exit code {proc.returncode}"
            raise CompareError(f"building {what} failed: {reason}")


def _wait(proc: subprocess.Popen[bytes], output: Output | None, deadline: float) -> None:
    if output is None or proc.stdout is None:
        proc.wait(timeout=max(deadline - time.monotonic(), 0.0))
        return
    fd = proc.stdout.fileno()
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(proc.args, BUILD_TIMEOUT_S)
        ready, _, _ = select.select([fd], [], [], min(remaining, 1.0))
        if not ready:
            output("")  # a tick: a long step's elapsed time goes on
            continue
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        output(chunk.decode(errors="replace"))
    proc.stdout.close()
    proc.wait(timeout=max(deadline - time.monotonic(), 1.0))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """The script and its `go build`s: its own session, so the whole group goes."""
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def tool_path(name: str) -> str:
    """Absolute path of one built executable, building the cache first when needed."""
    if name not in BINARIES:
        raise ValueError(f"unknown tool {name!r}")
    path = bin_dir() / name
    if not path.exists():
        ensure_binaries()
    return str(path)
