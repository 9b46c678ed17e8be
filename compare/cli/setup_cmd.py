"""`compare setup` (build what the toolkit needs), `compare doctor` (report what is there) and
`compare --version`."""

from __future__ import annotations

import os
import shutil
import time
from typing import Annotated

import typer
from rich.status import Status

from compare import __version__
from compare.cli.common import console, say
from compare.cluster import EmbeddedCluster
from compare.cluster.binaries import build_logs, ensure_binaries
from compare.cluster.toolchain import (
    ARGOCD,
    CONTROL_PLANE,
    FLUX,
    binary_status,
    go_status,
    missing_binaries,
    pinned_versions,
)
from compare.errors import EXIT_FAILED
from compare.inert import terminal
from compare.paths import DATA_ROOT, IN_SOURCE_TREE, REPORTS_DIR, bin_dir, cache_dir


def version_text() -> str:
    """The toolkit's version and the pinned versions of what it builds and runs."""
    lines = [f"compare (helm-vs-operator) {__version__}"]
    lines += [f"  {name:<18} {version}" for name, version in pinned_versions().items()]
    return "\n".join(lines)


class BuildProgress:
    """The build script's lines as they come; the step in progress (the script prints a step's
    name when it starts and its time when it ends) in a spinner with the seconds it has run."""

    def __init__(self) -> None:
        self.partial = ""
        self.since = time.monotonic()
        self.status = Status("", console=console)

    def __enter__(self) -> BuildProgress:
        self.status.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.status.stop()
        if self.partial.strip():
            say(self.partial.rstrip())

    def __call__(self, chunk: str) -> None:
        if chunk:
            *lines, self.partial = (self.partial + chunk).split("\n")
            for line in lines:
                say(line)
            if lines:
                self.since = time.monotonic()
        step = self.partial.strip()
        if step:
            elapsed = time.monotonic() - self.since
            self.status.update(terminal(f"building {step} ({elapsed:.0f} s)"))
        else:
            self.status.update("")


def build_with_progress() -> None:
    """Build the missing or stale binaries, the build script's progress on the terminal."""
    if go_status().problem is None:  # else the build stops before it starts, saying why
        control, flux = build_logs()
        say(f"build logs: {control}, {flux}")
    with BuildProgress() as progress:
        ensure_binaries(quiet=False, output=progress)


def setup(
    check: Annotated[
        bool, typer.Option("--check", help="Only report what is there (as `compare doctor`).")
    ] = False,
) -> None:
    """Build the embedded control plane and the Flux controllers from the shipped Go modules
    (minutes the first time, cached in ~/.cache/helm-vs-operator), then report what is there."""
    if not check:
        go = go_status()
        missing = missing_binaries()
        if go.problem is None:
            say(f"Go: {go.describe()}")
        if missing and go.problem is None:
            say(f"building {', '.join(missing)} into {bin_dir()}")
        build_with_progress()
    doctor()


def doctor() -> None:
    """Report what the toolkit needs and finds: Go, the binaries and their versions, the
    cluster, chromium. Exit 1 when a binary is missing or not the pinned version."""
    where = "source tree" if IN_SOURCE_TREE else "installed package"
    say(f"compare (helm-vs-operator) {__version__}")
    say(f"  data:      {DATA_ROOT} ({where})")
    say(f"  reports:   {REPORTS_DIR.resolve()}")
    say(f"  cache:     {cache_dir()}")
    go = go_status()
    if go.problem is None:
        say(f"Go           ok: {go.describe()}")
    else:
        say(f"Go           {go.problem}")
    pins = pinned_versions()
    say(f"binaries     in {bin_dir()}")
    bad = []
    for name in CONTROL_PLANE + FLUX + ARGOCD:
        status = binary_status(name, pins, go.path)
        if not status.present or status.matches is False:
            bad.append(name)
        mark = "ok " if status.present and status.matches is not False else "!! "
        say(f"  {mark}{name:<24} {status.describe()}")
    cluster = EmbeddedCluster()
    state = cluster.status()
    if state.running:
        say(f"cluster      {cluster.name!r} running (kubeconfig {state.kubeconfig})")
    elif state.exists:
        say(f"cluster      {cluster.name!r} stopped: `compare cluster up` restarts it")
    else:
        say(f"cluster      {cluster.name!r} not created: `compare cluster up` starts it")
    chromium = os.environ.get("COMPARE_CHROMIUM") or shutil.which("chromium")
    chromium = chromium or shutil.which("chromium-browser")
    redis = shutil.which("redis-server")
    if redis:
        say(f"redis        {redis}")
    else:
        say(
            "redis        not found (only the argocd approach needs it; `make setup` installs"
            " Debian's redis-server)"
        )
    if chromium:
        say(f"chromium     {chromium}")
    else:
        say(
            "chromium     not found (only the HTML report's browser test needs it; set"
            " COMPARE_CHROMIUM or install chromium)"
        )
    if bad:
        hint = "run `compare setup`" if go.problem is None else go.problem
        say(f"not ready: {', '.join(bad)}: {hint}")
        raise typer.Exit(EXIT_FAILED)
    say("ready")
