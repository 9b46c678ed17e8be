"""Outputs never destroy: every file the toolkit writes goes through compare.outputfile, which
writes only a new path or a regular file (atomically), never a device node, a FIFO, a socket,
a directory, a symlink to one of those or the command's own input.

Device nodes are never touched for real: a symlink to /dev/null is made in tmp_path and the
test asserts /dev/null is still a character device afterwards; as root, a character device
node of our own is made with os.mknod in tmp_path.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare import outputfile
from compare.cli import app
from compare.errors import CompareError
from compare.paths import EXPERIMENTS_DIR
from tests.results.helpers import fixture

runner = CliRunner()


def _special(kind: str, path: Path) -> None:
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "directory":
        path.mkdir()
    elif kind == "symlink-to-dev-null":
        path.symlink_to("/dev/null")
    elif kind == "symlink-to-fifo":
        os.mkfifo(path.with_name("real-fifo"))
        path.symlink_to(path.with_name("real-fifo"))
    elif kind == "dangling-symlink":
        path.symlink_to(path.with_name("nowhere"))
    elif kind == "symlink-loop":
        path.symlink_to(path.with_name("loop-b"))
        path.with_name("loop-b").symlink_to(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
        sock.close()
    elif kind == "char-device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root (CI runs as root)")
        os.mknod(path, 0o600 | stat.S_IFCHR, os.makedev(1, 3))  # our own copy of /dev/null
    else:  # pragma: no cover - a typo in the parametrisation
        raise AssertionError(kind)


def _state(path: Path) -> tuple[int, int]:
    info = path.lstat()
    return stat.S_IFMT(info.st_mode), info.st_ino


SPECIALS = [
    ("fifo", "is a FIFO"),
    ("directory", "is a directory"),
    ("symlink-to-dev-null", "is a character device (a symlink to /dev/null)"),
    ("symlink-to-fifo", "is a FIFO (a symlink to"),
    ("dangling-symlink", "a symlink to nothing"),
    ("symlink-loop", "a symlink loop"),
    ("socket", "is a socket"),
    ("char-device", "is a character device"),
]


@pytest.mark.parametrize(("kind", "said"), SPECIALS, ids=[k for k, _ in SPECIALS])
def test_write_refuses_what_is_not_a_regular_file(tmp_path: Path, kind: str, said: str) -> None:
    path = tmp_path / "out.md"
    _special(kind, path)
    before = _state(path)
    dev_null = os.stat("/dev/null")
    with pytest.raises(CompareError) as caught:
        outputfile.write_text(path, "# report\n")
    assert str(path) in caught.value.message and said in caught.value.message
    assert _state(path) == before  # still the same node, not replaced by a regular file
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    assert os.stat("/dev/null").st_ino == dev_null.st_ino
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def test_write_replaces_a_regular_file_atomically_keeping_its_mode(tmp_path: Path) -> None:
    path = tmp_path / "report.md"
    path.write_text("old\n")
    path.chmod(0o640)
    outputfile.write_text(path, "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.md"]


def test_write_through_a_symlink_to_a_regular_file_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old\n")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    outputfile.write_text(link, "new\n")
    assert link.is_symlink() and real.read_text() == "new\n"


def test_write_refuses_its_own_input(tmp_path: Path) -> None:
    source = tmp_path / "results.json"
    source.write_text("{}\n")
    alias = tmp_path / "alias.json"
    alias.symlink_to(source)
    for path in (source, alias):
        with pytest.raises(CompareError, match="this command's own input"):
            outputfile.write_text(path, "x", inputs=[source])
    assert source.read_text() == "{}\n"


def test_append_refuses_fifo_symlink_and_device(tmp_path: Path) -> None:
    fifo = tmp_path / "log"
    os.mkfifo(fifo)
    with pytest.raises(CompareError, match="not a regular file"):
        outputfile.open_append(fifo)  # never blocks: O_NONBLOCK
    link = tmp_path / "link.log"
    link.symlink_to("/dev/null")
    with pytest.raises(CompareError, match="a symlink"):
        outputfile.open_append(link)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    with outputfile.open_append(tmp_path / "new.log") as out:
        out.write(b"one\n")
    with outputfile.open_append(tmp_path / "new.log") as out:
        out.write(b"two\n")
    assert (tmp_path / "new.log").read_text() == "one\ntwo\n"


def test_a_parent_that_is_a_file_is_named(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    with pytest.raises(CompareError, match="afile is not a directory"):
        outputfile.write_text(tmp_path / "afile" / "sub" / "r.md", "x")


# -- through the CLI: `compare report -o` ------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "said"),
    [s for s in SPECIALS if s[0] != "directory"],
    ids=[k for k, _ in SPECIALS if k != "directory"],
)
def test_report_output_never_replaces_a_special_file(tmp_path: Path, kind: str, said: str) -> None:
    out = tmp_path / "report.md"
    _special(kind, out)
    before = _state(out)
    result = runner.invoke(
        app, ["report", str(fixture("single-trial")), "-f", "md", "-o", str(out)]
    )
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(f"error: --output {out}: "), lines
    assert said in lines[0]
    assert _state(out) == before
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_report_output_over_its_own_results_is_refused(tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    results = run / "results.json"
    results.write_bytes(fixture("single-trial").read_bytes())
    before = results.read_bytes()
    for target in (results, run / "." / "results.json"):
        result = runner.invoke(app, ["report", str(run), "-f", "md", "-o", str(target)])
        assert result.exit_code == 2, result.output
        assert "this command's own input" in result.stderr
        assert results.read_bytes() == before
    policy = tmp_path / "policy.yaml"
    policy.write_text((EXPERIMENTS_DIR / "policy.yaml").read_text())
    result = runner.invoke(
        app, ["report", str(run), "-f", "junit", "--policy", str(policy), "-o", str(policy)]
    )
    assert result.exit_code == 2 and "own input" in result.stderr, result.output


def test_report_output_to_a_new_file_and_over_a_regular_one(tmp_path: Path) -> None:
    out = tmp_path / "r.md"
    for _ in range(2):
        result = runner.invoke(
            app, ["report", str(fixture("single-trial")), "-f", "md", "-o", str(out)]
        )
        assert result.exit_code == 0, result.output
        assert "helm" in out.read_text()
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
