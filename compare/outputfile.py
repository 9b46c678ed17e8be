"""Writing a file the toolkit produces: one helper for every output (reports, results.json,
journals, logs, state files), the counterpart of `compare.inputfile`.

CI runs as root, so a write must never replace or feed what the toolkit did not create:

- an existing path must be a regular file (a symlink is followed to one and the link kept);
  a device node, FIFO, socket or directory, a symlink to one of those, a symlink to nothing
  and a symlink loop are refused: renaming a temp file over `/dev/null` would replace the
  machine's device node, opening a FIFO would block;
- a path that is one of the command's own inputs (results.json when rendering its report) is
  refused;
- a regular file is replaced atomically (a temp file in the same directory, then a rename):
  readers see the old content or the new, never half. Only regular files are renamed over.

Each problem is one CompareError line naming the path.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import IO

from compare.errors import CompareError

_KINDS = {
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a FIFO",
    stat.S_IFSOCK: "a socket",
    stat.S_IFDIR: "a directory",
}


def _kind(mode: int) -> str:
    return _KINDS.get(stat.S_IFMT(mode), "not a regular file")


def output_path(path: Path, *, inputs: Iterable[Path] = ()) -> Path:
    """The path to write `path`'s new content to: `path` itself, or the regular file a
    symlink points at. CompareError for anything that is not (or would not be) a regular
    file of our own making, or that is one of `inputs`."""
    path = Path(path)
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        _check_directory(path, path.parent, "write", writable=False)
        return path
    except OSError as exc:
        raise CompareError(f"{path}: cannot write ({exc.strerror or exc})") from None
    target = path
    if stat.S_ISLNK(info.st_mode):
        try:
            target = path.resolve(strict=True)
            info = os.stat(target)
        except FileNotFoundError:
            raise CompareError(
                f"{path}: a symlink to nothing ({os.readlink(path)}); not written through"
            ) from None
        except (RuntimeError, OSError) as exc:
            if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
                raise CompareError(f"{path}: a symlink loop; not written") from None
            raise CompareError(f"{path}: cannot write ({exc})") from None
    if not stat.S_ISREG(info.st_mode):
        via = f" (a symlink to {target})" if target != path else ""
        raise CompareError(
            f"{path}: is {_kind(info.st_mode)}{via}; only a regular file or a new path is "
            "written (a device, FIFO, socket or directory is never replaced)"
        )
    for source in inputs:
        try:
            same = os.path.samefile(target, source)
        except OSError:
            same = False
        if same:
            raise CompareError(
                f"{path}: is this command's own input ({source}); write the output elsewhere"
            )
    return target


def check_directory(path: Path) -> Path:
    """A directory outputs will go into: it is one, or it can be made (every existing part of
    the path is a writable directory). Nothing is created: a command that fails later (no
    cluster) leaves no empty directory behind."""
    path = Path(path)
    _check_directory(path, path, "create", writable=True)
    return path


def _check_directory(path: Path, directory: Path, verb: str, *, writable: bool) -> None:
    """`directory` (for `path`) must be a directory, or creatable as one: its nearest existing
    part is a directory (`writable`: that this process may write to)."""
    for part in [directory, *directory.parents]:
        try:
            info = os.stat(part)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except OSError as exc:
            raise CompareError(f"{path}: cannot {verb} ({exc.strerror or exc})") from None
        if not stat.S_ISDIR(info.st_mode):
            raise CompareError(f"{path}: cannot {verb} ({part} is not a directory)")
        if writable and not os.access(part, os.W_OK | os.X_OK):
            raise CompareError(f"{path}: cannot {verb} ({part}: permission denied)")
        return


def write_text(
    path: Path, text: str, *, inputs: Iterable[Path] = (), mode: int | None = None
) -> Path:
    """Write `text` (UTF-8) to `path` atomically; see `write_bytes`."""
    return write_bytes(path, text.encode("utf-8"), inputs=inputs, mode=mode)


def write_bytes(
    path: Path, data: bytes, *, inputs: Iterable[Path] = (), mode: int | None = None
) -> Path:
    """Write `data` to `path` (checked by `output_path`) through a temp file and a rename.

    The new file keeps an existing file's permissions, else `mode` (default 0644: a report
    is meant to be read, served, uploaded like any file). Returns the path written."""
    target = output_path(path, inputs=inputs)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        keep = target.stat().st_mode & 0o777 if target.exists() else None
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise CompareError(f"{path}: cannot write ({exc.strerror or exc})") from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.chmod(tmp, keep if keep is not None else (0o644 if mode is None else mode))
        # Checked again just before the rename: a FIFO or device swapped in meanwhile stays.
        output_path(path, inputs=inputs)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise CompareError(f"{path}: cannot write ({exc.strerror or exc})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def open_append(path: Path, *, mode: int = 0o600) -> IO[bytes]:
    """`path` opened for appending (created if new): a log. Never follows a symlink, never
    blocks on a FIFO, and refuses anything that is not a regular file."""
    path = Path(path)
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise CompareError(f"{path}: a symlink; a log is not written through one") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise CompareError(f"{path}: not a regular file; no log written") from None
        raise CompareError(f"{path}: cannot write ({exc.strerror or exc})") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise CompareError(f"{path}: is {_kind(info.st_mode)}; no log written")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "ab")


def create_new(path: Path, *, mode: int = 0o600) -> IO[bytes]:
    """A file that must not exist yet (O_EXCL: nothing at the path is ever opened)."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    except OSError as exc:
        raise CompareError(f"{path}: cannot write ({exc.strerror or exc})") from None
    return os.fdopen(fd, "wb")
