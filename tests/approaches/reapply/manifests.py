"""The reapply approach's stored manifests: one JSON file per deployed arm (namespace, release,
values, the objects applied) in its cluster's state directory, read by its controller at every
pass.

A pass and a change of the files (a deploy storing one, an undeploy dropping one) hold one file
lock, so an undeploy that dropped a manifest knows no pass will apply it again: the objects it
deletes next stay deleted.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from compare.deploy.local import write_json

# How long a deploy or undeploy waits for a pass to finish (a pass applies a few objects, each
# call bounded by the client's request timeout).
LOCK_TIMEOUT_S = 60.0
POLL_S = 0.05


@dataclass(frozen=True)
class Stored:
    """A deployed arm: what its controller re-applies, and what `compare status` finds."""

    namespace: str
    release: str
    values: dict[str, Any]
    objects: list[dict[str, Any]]


def _folder(directory: Path) -> Path:
    return directory / "manifests"


def _file(directory: Path, namespace: str, release: str) -> Path:
    # Both are DNS labels: no `_` in either.
    return _folder(directory) / f"{namespace}_{release}.json"


@contextlib.contextmanager
def locked(directory: Path, *, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the manifests' lock (across processes); a TimeoutError past `timeout`."""
    directory.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + timeout
    with (directory / "manifests.lock").open("a") as handle:
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{directory}: manifests locked for more than {timeout:.0f}s"
                    ) from None
                time.sleep(POLL_S)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def store(directory: Path, stored: Stored) -> None:
    """Write (replace) the arm's manifest; the caller holds the lock."""
    path = _file(directory, stored.namespace, stored.release)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_json(path, asdict(stored))  # the toolkit's atomic replace


def drop(directory: Path, namespace: str, release: str) -> bool:
    """Remove the arm's manifest (the caller holds the lock); whether there was one."""
    path = _file(directory, namespace, release)
    existed = path.exists()
    path.unlink(missing_ok=True)
    return existed


def read_one(directory: Path, namespace: str, release: str) -> Stored | None:
    return _read(_file(directory, namespace, release))


def read_all(directory: Path, namespace: str | None = None) -> list[Stored]:
    """Every stored manifest (of `namespace` only, when given), by namespace and release."""
    found = [_read(path) for path in sorted(_folder(directory).glob("*.json"))]
    return [s for s in found if s is not None and namespace in (None, s.namespace)]


def _read(path: Path) -> Stored | None:
    try:
        return Stored(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
