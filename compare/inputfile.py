"""Reading a file the user named: one helper for every input (WebApp, values, experiments,
policy, results, kubeconfig).

Every read is bounded: only a regular file is read (a device such as /dev/zero would never end,
a FIFO without a writer would block forever), at most `limit` bytes, and the text must be
UTF-8. Each problem is one CompareError line naming the file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Any

import yaml

from compare.errors import CompareError

# Far above any real input (the largest results.json of a full run is a few MiB).
MAX_INPUT_BYTES = 64 * 1024 * 1024


def _size(limit: int) -> str:
    return f"{limit // (1024 * 1024)} MiB" if limit >= 1024 * 1024 else f"{limit} bytes"


def read_bytes(path: Path, *, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of a regular file of at most `limit` bytes; CompareError otherwise."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise CompareError(f"{path}: no such file") from None
    except OSError as exc:
        raise CompareError(f"{path}: cannot read ({exc.strerror or exc})") from None
    if stat.S_ISDIR(info.st_mode):
        raise CompareError(f"{path}: is a directory, not a file")
    if not stat.S_ISREG(info.st_mode):
        raise CompareError(f"{path}: not a regular file (a device, FIFO or socket is not read)")
    if info.st_size > limit:
        raise CompareError(f"{path}: larger than {_size(limit)} ({info.st_size} bytes)")
    try:
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open never blocks.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        reason = "permission denied" if exc.errno == errno.EACCES else exc.strerror or str(exc)
        raise CompareError(f"{path}: cannot read ({reason})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise CompareError(f"{path}: not a regular file")
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(1024 * 1024, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise CompareError(f"{path}: larger than {_size(limit)}")
    except OSError as exc:
        raise CompareError(f"{path}: cannot read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_text(path: Path, *, limit: int = MAX_INPUT_BYTES) -> str:
    """The UTF-8 text of a regular file (see `read_bytes`); a BOM is dropped."""
    data = read_bytes(path, limit=limit)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise CompareError(
            f"{path}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start})"
        ) from None


def parse_yaml(text: str, source: str) -> Any:
    """One YAML document (None when empty); several documents or bad syntax: CompareError."""
    try:
        documents = list(yaml.safe_load_all(text))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None)
        detail = f" ({problem})" if problem else ""
        raise CompareError(f"{source}: not valid YAML{where}{detail}") from None
    except RecursionError:
        raise CompareError(f"{source}: YAML nested too deeply") from None
    documents = [doc for doc in documents if doc is not None] or [None]
    if len(documents) > 1:
        raise CompareError(
            f"{source}: holds {len(documents)} YAML documents (separated by ---); "
            "give exactly one per file"
        )
    return documents[0]


def load_yaml(path: Path, *, limit: int = MAX_INPUT_BYTES) -> Any:
    """Read and parse a one-document YAML file."""
    return parse_yaml(read_text(path, limit=limit), str(path))
