"""Outputs in shared directories, and the third sweep's cases that need a process of their own
(issue 37, items 3 and 8).

- A shared directory (sticky, world-writable: /tmp) where someone else planted the report's
  path as a symlink to a file of root's: the file is untouched, the command refuses in one
  line. As root (CI) the planted link really belongs to uid 65534 (`os.lchown`); otherwise the
  process's uid is made to look different (`os.geteuid` patched), as the check compares them.
- A disk that fills up (a 64 KiB tmpfs, mounted when the test may mount) or a file-size limit
  (RLIMIT_FSIZE in the child: EFBIG): one line, the partial file removed, the old one kept.
- A closed stdout (`compare report | head -0`), COLUMNS=99999999, no home directory, LANG=C
  with non-ASCII names, results holding 1.5e308 or 5e-324: never a traceback or a hang.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare import outputfile
from compare.cli import app
from compare.errors import CompareError
from tests.results.helpers import fixture

runner = CliRunner()
COMPARE = Path(sys.executable).parent / "compare"
OTHER_UID = 65534  # nobody


def _lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip()]


def _one_error(result: object, fragment: str, code: int = 2) -> str:
    exit_code = getattr(result, "exit_code", None)
    if exit_code is None:
        exit_code = getattr(result, "returncode")  # noqa: B009 - a CompletedProcess
    stderr = getattr(result, "stderr")  # noqa: B009
    stderr = stderr.decode() if isinstance(stderr, bytes) else stderr
    assert exit_code == code, (exit_code, stderr)
    (line,) = _lines(stderr)
    assert line.startswith("error: ") and fragment in line, line
    assert "Traceback" not in stderr
    return line


@pytest.fixture
def shared(tmp_path: Path) -> Path:
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(0o1777)
    return directory


@pytest.fixture
def foreign(monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    """Makes `path` belong to someone else: really as root, else by this process's uid
    looking different to the check."""

    def own(path: Path) -> None:
        if os.geteuid() == 0:
            os.lchown(path, OTHER_UID, OTHER_UID)

    if os.geteuid() != 0:
        real = os.geteuid()
        monkeypatch.setattr(os, "geteuid", lambda: real + 1)
    yield own


def _victim(tmp_path: Path) -> tuple[Path, bytes, int]:
    victim = tmp_path / "root-owned.conf"
    victim.write_text("precious\n")
    return victim, victim.read_bytes(), victim.stat().st_ino


def test_a_planted_symlink_in_a_shared_directory_is_refused(
    tmp_path: Path, shared: Path, foreign: object
) -> None:
    victim, content, inode = _victim(tmp_path)
    planted = shared / "report.md"
    planted.symlink_to(victim)
    foreign(planted)  # type: ignore[operator]
    result = runner.invoke(
        app, ["report", str(fixture("single-trial")), "-f", "md", "-o", str(planted)]
    )
    line = _one_error(result, f"--output {planted}: a symlink owned by uid")
    assert f"in the shared directory {shared}" in line
    assert victim.read_bytes() == content and victim.stat().st_ino == inode
    assert planted.is_symlink() and os.readlink(planted) == str(victim)
    assert sorted(p.name for p in shared.iterdir()) == ["report.md"]  # no temp file left


def test_a_foreign_file_in_a_shared_directory_is_never_replaced(
    tmp_path: Path, shared: Path, foreign: object
) -> None:
    planted = shared / "results.md"
    planted.write_text("someone else's\n")
    foreign(planted)  # type: ignore[operator]
    with pytest.raises(CompareError, match=r"a file owned by uid .* in the shared directory"):
        outputfile.write_text(planted, "new\n")
    assert planted.read_text() == "someone else's\n"
    with pytest.raises(CompareError, match="not appended to"):
        outputfile.open_append(planted)
    assert planted.read_text() == "someone else's\n"


def test_a_foreign_symlink_is_never_followed_anywhere(tmp_path: Path, foreign: object) -> None:
    victim, content, _ = _victim(tmp_path)
    own_dir = tmp_path / "mine"
    own_dir.mkdir()
    planted = own_dir / "report.md"
    planted.symlink_to(victim)
    foreign(planted)  # type: ignore[operator]
    with pytest.raises(CompareError, match="a symlink owned by uid"):
        outputfile.write_text(planted, "new\n")
    assert victim.read_bytes() == content


def test_a_run_output_planted_in_a_shared_directory_is_refused(
    tmp_path: Path, shared: Path, foreign: object
) -> None:
    elsewhere = tmp_path / "theirs"
    elsewhere.mkdir()
    planted = shared / "reports"
    planted.symlink_to(elsewhere)
    foreign(planted)  # type: ignore[operator]
    with pytest.raises(CompareError, match=r"a symlink owned by uid .* not written into"):
        outputfile.check_directory(planted)
    assert list(elsewhere.iterdir()) == []


def test_own_files_in_a_shared_directory_are_written(shared: Path) -> None:
    """Not over-refusing: the user's own file, and the user's own link to their own file."""
    mine = shared / "mine.md"
    outputfile.write_text(mine, "one\n")
    outputfile.write_text(mine, "two\n")
    assert mine.read_text() == "two\n"
    link = shared / "link.md"
    link.symlink_to(mine)
    outputfile.write_text(link, "three\n")
    assert mine.read_text() == "three\n" and link.is_symlink()


def test_an_own_link_to_a_foreign_file_in_a_shared_directory_is_refused(
    tmp_path: Path, shared: Path
) -> None:
    theirs = shared / "theirs.md"
    theirs.write_text("theirs\n")
    link = tmp_path / "link.md"
    link.symlink_to(theirs)
    if os.geteuid() == 0:
        os.lchown(theirs, OTHER_UID, OTHER_UID)
        with pytest.raises(CompareError, match="links to it; not written"):
            outputfile.write_text(link, "new\n")
        assert theirs.read_text() == "theirs\n"
    else:  # as a user, the link's owner and the file's must differ: the file is ours
        outputfile.write_text(link, "new\n")
        assert theirs.read_text() == "new\n"


# -- a full disk, a file-size limit ------------------------------------------------------


def _report(out: Path, **kwargs: object) -> subprocess.CompletedProcess[bytes]:
    args = [str(COMPARE), "report", str(fixture("full-run")), "-f", "html", "-o", str(out)]
    return subprocess.run(args, capture_output=True, timeout=120, check=False, **kwargs)  # type: ignore[call-overload,no-any-return]


def _fsize_limit() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))


def test_a_file_size_limit_leaves_no_partial_file(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    out.write_text("old report\n")
    result = _report(out, preexec_fn=_fsize_limit)
    _one_error(result, "larger than the file-size limit (ulimit -f); the partial file was removed")
    assert out.read_text() == "old report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]


def _mount_tmpfs(where: Path) -> bool:
    if os.geteuid() != 0:
        return False
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(where)],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return done.returncode == 0


def test_a_full_disk_leaves_no_partial_file(tmp_path: Path) -> None:
    """ENOSPC on a 64 KiB tmpfs when this process may mount one (CI runs as root); where it
    may not, the same path through a file-size limit (EFBIG), so the test always runs."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = _mount_tmpfs(disk)
    try:
        out = disk / "report.html"
        out.write_text("old report\n")
        if mounted:
            (disk / "filler").write_bytes(b"x" * 40 * 1024)
            result = _report(out)
            said = "no space left on the device; the partial file was removed"
        else:
            result = _report(out, preexec_fn=_fsize_limit)
            said = "the partial file was removed"
        _one_error(result, f"--output {out}: cannot write ({said}")
        assert out.read_text() == "old report\n"
        assert not [p for p in disk.iterdir() if p.name.endswith(".tmp")]
    finally:
        if mounted:
            subprocess.run(["umount", str(disk)], check=True, timeout=30)


# -- stdout closed, a huge terminal, no home, LANG=C ---------------------------------------


def test_a_closed_stdout_ends_quietly() -> None:
    read, write = os.pipe()
    os.close(read)  # `| head -0`: the reader is gone before anything is written
    try:
        result = subprocess.run(
            [str(COMPARE), "report", str(fixture("full-run"))],
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write)
    assert result.returncode == 1, result.stderr
    assert result.stderr == b""


def test_a_huge_terminal_width_is_clamped() -> None:
    env = {**os.environ, "COLUMNS": "99999999", "TERMINAL_WIDTH": "99999999"}
    result = subprocess.run(
        [str(COMPARE), "--help"], capture_output=True, env=env, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert b"report" in result.stdout and len(result.stdout) < 200_000


def test_no_home_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """HOME unset and no entry in the user database (many containers): report and check work,
    a command that needs the cache says why in one line."""
    import pwd

    def nobody(uid: int) -> pwd.struct_passwd:
        raise KeyError(f"getpwuid(): uid not found: {uid}")

    monkeypatch.setattr(pwd, "getpwuid", nobody)
    env: dict[str, str | None] = {"HOME": None, "XDG_CACHE_HOME": None, "COMPARE_CACHE_DIR": None}
    env["KUBECONFIG"] = None
    results = str(fixture("single-trial"))
    assert runner.invoke(app, ["report", results], env=env).exit_code == 0
    assert runner.invoke(app, ["check", results], env=env).exit_code in (0, 1)
    for args in (["status"], ["--context", "prod", "status"]):
        result = runner.invoke(app, args, env=env)
        _one_error(result, "no home directory (HOME is unset and uid")


def test_lang_c_with_non_ascii_names(tmp_path: Path) -> None:
    run = tmp_path / "rün"
    run.mkdir()
    doc = json.loads(fixture("single-trial").read_text())
    doc["runId"] = "rün-✓"
    (run / "results.json").write_text(json.dumps(doc, ensure_ascii=False))
    for extra in ({"LANG": "C"}, {"LC_ALL": "C"}, {"LC_ALL": "C", "PYTHONUTF8": "0"}):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "LANG"))}
        env.update(extra, PYTHONIOENCODING="ascii")
        for args in (["report", str(run)], ["check", str(run)]):
            result = subprocess.run(
                [str(COMPARE), *args], capture_output=True, env=env, timeout=120, check=False
            )
            assert result.returncode in (0, 1), (extra, args, result.stderr)
            assert b"Traceback" not in result.stderr and b"unexpected" not in result.stderr
        result = subprocess.run(
            [str(COMPARE), "report", str(run), "-f", "md", "-o", str(tmp_path / "bericht-ä.md")],
            capture_output=True,
            env=env,
            timeout=120,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert "rün-✓" in (tmp_path / "bericht-ä.md").read_text(encoding="utf-8")
        result = subprocess.run(
            [str(COMPARE), "deploy", "helm", "--app", str(tmp_path / "äpp.yaml")],
            capture_output=True,
            env=env,
            timeout=120,
            check=False,
        )
        _one_error(result, "pp.yaml: no such file")


# -- numbers at the ends of the float range -------------------------------------------------


@pytest.mark.parametrize("value", ["1.5e308", "5e-324", "1e-300", "1e300"])
@pytest.mark.parametrize("field", ["timeToHealSeconds", "healWindowSeconds"])
def test_extreme_numbers_in_results_never_crash_a_report(
    tmp_path: Path, value: str, field: str
) -> None:
    doc = json.loads(fixture("single-trial").read_text())
    for trial in doc["trials"]:
        trial[field] = "__X__"
    source = tmp_path / "results.json"
    source.write_text(json.dumps(doc).replace('"__X__"', value))
    for fmt in ("table", "md", "html", "junit", "json"):
        out = tmp_path / f"report.{fmt}"
        result = runner.invoke(app, ["report", str(source), "-f", fmt, "-o", str(out)])
        # Accepted and drawn at the axis' edge, or refused as out of range: never exit 3.
        assert result.exit_code in (0, 2), (fmt, result.stderr)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        if result.exit_code == 2:
            (line,) = _lines(result.stderr)
            assert str(source) in line
        else:
            assert out.stat().st_size > 0
    assert stat.S_ISREG(source.stat().st_mode)
