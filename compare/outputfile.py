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

A shared directory (sticky and world-writable, as /tmp) is where someone else may plant the
final path beforehand - a symlink to a file of root's that CI would then overwrite:

- a symlink owned by someone else is never followed, anywhere (the kernel's
  `fs.protected_symlinks` rule, kept whatever the sysctl says);
- in a shared directory, an existing path (a symlink or a file) owned by someone else is
  refused, never replaced, appended to or written through;
- a path written with a trailing slash names a directory: it is never written as a file.

The rename itself never follows a symlink (it replaces the directory entry), so a link swapped
in after the checks is replaced, not written through.

A write that fails midway (no space left, a file-size limit) removes its temp file: the old
file, or no file, is left - never a partial one.

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


def _shared(directory: Path) -> bool:
    """A sticky, world-writable directory (/tmp, /var/tmp, /dev/shm): anyone may create there,
    so what a path names there may have been planted by someone else."""
    try:
        mode = os.stat(directory).st_mode
    except OSError:
        return False
    return bool(mode & stat.S_ISVTX and mode & stat.S_IWOTH)


def _refuse_foreign(path: Path, info: os.stat_result, what: str) -> None:
    """CompareError when `path` (lstat `info`) is someone else's and must not be trusted: a
    symlink of another user's anywhere, any entry of another user's in a shared directory."""
    if info.st_uid == os.geteuid():
        return
    link = stat.S_ISLNK(info.st_mode)
    if not link and not _shared(path.parent):
        return
    kind = "a symlink" if link else "a file" if stat.S_ISREG(info.st_mode) else _kind(info.st_mode)
    where = f" in the shared directory {path.parent}" if _shared(path.parent) else ""
    raise CompareError(
        f"{path}: {kind} owned by uid {info.st_uid}, not by this user{where}; {what}"
        " (write to a path of your own)"
    )


def _trailing_slash(path: str | os.PathLike[str]) -> None:
    """`-o afile/` names a directory: never written as the file `afile` (pathlib drops the
    slash, so the string as given is looked at)."""
    raw = os.fspath(path)
    if not raw.endswith(os.sep) or not raw.strip(os.sep):
        return
    bare = raw.rstrip(os.sep)
    if os.path.isfile(bare):
        raise CompareError(
            f"{raw}: ends with '{os.sep}' (a directory), but {bare} is a file; not written"
            " (drop the slash to replace the file)"
        )
    raise CompareError(f"{raw}: ends with '{os.sep}', a directory; give a file's path")


def output_path(path: str | os.PathLike[str], *, inputs: Iterable[Path] = ()) -> Path:
    """The path to write `path`'s new content to: `path` itself, or the regular file a
    symlink of the user's own points at. CompareError for anything that is not (or would not
    be) a regular file of our own making, that someone else may have planted (see the module),
    that is named as a directory (a trailing slash) or that is one of `inputs`."""
    _trailing_slash(path)
    path = Path(path)
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        _check_directory(path, path.parent, "write", writable=False)
        return path
    except OSError as exc:
        raise CompareError(f"{path}: cannot write ({exc.strerror or exc})") from None
    _refuse_foreign(path, info, "not written through or over")
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
    if target != path and stat.S_ISREG(info.st_mode):
        # Our own link to someone else's file in a shared directory: no better.
        _refuse_foreign(target, os.lstat(target), f"{path} links to it; not written")
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
    try:
        info = os.lstat(path)
    except OSError:
        info = None  # nothing there yet: made by this user when the run starts
    if info is not None:
        _refuse_foreign(path, info, "not written into")
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
    path: str | os.PathLike[str],
    text: str,
    *,
    inputs: Iterable[Path] = (),
    mode: int | None = None,
) -> Path:
    """Write `text` (UTF-8) to `path` atomically; see `write_bytes`."""
    # backslashreplace: a path given as undecodable bytes (LANG=C) and shown in the text
    # stays visible as escapes, never an encoding error (the file is always valid UTF-8).
    data = text.encode("utf-8", "backslashreplace")
    return write_bytes(path, data, inputs=inputs, mode=mode)


def write_bytes(
    path: str | os.PathLike[str],
    data: bytes,
    *,
    inputs: Iterable[Path] = (),
    mode: int | None = None,
) -> Path:
    """Write `data` to `path` (checked by `output_path`) through a temp file and a rename.

    The new file keeps an existing file's permissions, else `mode` (default 0644: a report
    is meant to be read, served, uploaded like any file). Returns the path written."""
    target = output_path(path, inputs=inputs)
    path = Path(path)
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
        Path(tmp).unlink(missing_ok=True)  # never a partial file: the old one, or none
        raise CompareError(f"{path}: cannot write ({_reason(exc)})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _reason(exc: OSError) -> str:
    """Why a write failed, as a user can act on it."""
    if exc.errno == errno.ENOSPC:
        return "no space left on the device; the partial file was removed"
    if exc.errno == errno.EDQUOT:
        return "disk quota exceeded; the partial file was removed"
    if exc.errno == errno.EFBIG:
        return "larger than the file-size limit (ulimit -f); the partial file was removed"
    return exc.strerror or str(exc)


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
    try:
        _refuse_foreign(path, info, "not appended to")
    except CompareError:
        os.close(fd)
        raise
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
