"""Installed-anywhere behaviour that needs no build and no cluster: the version, what setup and
doctor say when Go or the binaries are missing, ./reports of the working directory, the
generators that never write into an installed package."""

from __future__ import annotations

import re
import stat
import time
from importlib.metadata import version
from pathlib import Path

import pytest
from typer.testing import CliRunner

import compare
from compare.cli import app
from compare.cluster.binaries import ensure_binaries
from compare.cluster.toolchain import (
    ARGOCD,
    CONTROL_PLANE,
    FLUX,
    GO_MIN,
    go_status,
    parse_go_version,
    pinned_versions,
)
from compare.errors import CompareError
from compare.paths import DATA_ROOT, IN_SOURCE_TREE, REPORTS_DIR, SHIPPED, TOOLS_DIR
from tests.results.helpers import fixture_json, write_run

runner = CliRunner()


def _no_go_path(tmp_path: Path) -> str:
    """A PATH with bash (the build needs it) and no go."""
    only = tmp_path / "path"
    only.mkdir(exist_ok=True)
    bash = Path("/bin/bash")
    (only / "bash").symlink_to(bash)
    return str(only)


def _fake_go(tmp_path: Path, goversion: str) -> str:
    """A `go` that reports the given GOVERSION: the version check's input, nothing built."""
    only = tmp_path / "oldgo"
    only.mkdir()
    go = only / "go"
    go.write_text(f'#!/bin/sh\n[ "$1 $2" = "env GOVERSION" ] && echo {goversion}\n')
    go.chmod(go.stat().st_mode | stat.S_IXUSR)
    (only / "bash").symlink_to("/bin/bash")
    return str(only)


def test_version_is_one_source_with_the_pins() -> None:
    assert version("helm-vs-operator") == compare.__version__
    result = runner.invoke(app, ["--version"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"compare (helm-vs-operator) {compare.__version__}"
    env = "".join(
        (TOOLS_DIR / f).read_text()
        for f in ("versions.env", "flux/versions.env", "argocd/versions.env")
    )
    for variable in (
        "KUBE",
        "ETCD",
        "KWOK",
        "HELM",
        "SOURCE_CONTROLLER",
        "HELM_CONTROLLER",
        "ARGOCD",
        "ARGOCD_HELM",
    ):
        pinned = re.search(rf"^{variable}_VERSION=(\S+)$", env, re.MULTILINE)
        assert pinned is not None
        assert any(line.split()[-1] == pinned.group(1) for line in lines[1:]), variable
    assert [line.split()[0] for line in lines[1:]] == [
        "Kubernetes",
        "etcd",
        "kwok",
        "helm",
        "source-controller",
        "helm-controller",
        "argocd",
        "argocd-helm",
    ]


def test_a_missing_pin_names_the_file_and_variable(tmp_path: Path) -> None:
    (tmp_path / "flux").mkdir()
    (tmp_path / "versions.env").write_text((TOOLS_DIR / "versions.env").read_text())
    (tmp_path / "flux" / "versions.env").write_text("SOURCE_CONTROLLER_VERSION=v1.9.3\n")
    with pytest.raises(CompareError, match=r"flux/versions.env: no HELM_CONTROLLER_VERSION="):
        pinned_versions(tmp_path)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("go1.26.8", (1, 26)), ("go1.27rc1\n", (1, 27)), ("go1.9", (1, 9)), ("devel", None)],
)
def test_go_version_parsing(text: str, parsed: tuple[int, int] | None) -> None:
    assert parse_go_version(text) == parsed


def test_go_floor_agrees_with_the_build_scripts() -> None:
    for script in (
        TOOLS_DIR / "build.sh",
        TOOLS_DIR / "flux" / "build.sh",
        TOOLS_DIR / "argocd" / "build.sh",
    ):
        floor = re.search(r'\[ "\$go_minor" -ge (\d+) \]', script.read_text())
        assert floor is not None, script
        assert (1, int(floor.group(1))) == GO_MIN, script


def test_go_missing_or_too_old_is_said_with_the_version(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _no_go_path(tmp_path))
    missing = go_status()
    assert missing.path is None
    assert missing.problem is not None
    assert "no Go toolchain on PATH" in missing.problem
    assert "Go >= 1.26" in missing.problem
    monkeypatch.setenv("PATH", _fake_go(tmp_path, "go1.25.4"))
    old = go_status()
    assert old.version == "go1.25.4"
    assert old.problem is not None
    assert old.problem.startswith("Go go1.25.4 is too old")


def test_setup_without_go_and_binaries_says_what_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _no_go_path(tmp_path))
    monkeypatch.setenv("COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    result = runner.invoke(app, ["setup"])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    assert "the control-plane binaries are not built yet (etcd, kube-apiserver" in lines[0]
    assert "no Go toolchain on PATH" in lines[0]
    assert "compare setup" in lines[0]
    assert "build logs" not in result.stdout  # nothing started


def test_without_go_complete_binaries_are_used_as_they_are(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Nothing could be rebuilt without Go: the build script is not run (it would refuse)."""
    monkeypatch.setenv("PATH", _no_go_path(tmp_path))
    cache = tmp_path / "cache"
    monkeypatch.setenv("COMPARE_CACHE_DIR", str(cache))
    (cache / "bin").mkdir(parents=True)
    for name in (*CONTROL_PLANE, *FLUX):
        binary = cache / "bin" / name
        binary.write_text("#!/bin/sh\nexit 1\n")
        binary.chmod(0o755)
    ensure_binaries()
    assert sorted(p.name for p in cache.iterdir()) == ["bin"]  # no build log: nothing ran


def test_doctor_reports_missing_binaries_and_exits_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", _no_go_path(tmp_path))
    monkeypatch.setenv("COMPARE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COMPARE_CHROMIUM", "/opt/chromium/chrome")
    result = runner.invoke(app, ["doctor"])
    assert result.exit_code == 1, result.output
    out = result.stdout
    assert f"data:      {DATA_ROOT} (source tree)" in out
    assert "Go           no Go toolchain on PATH" in out
    for name in (*CONTROL_PLANE, *FLUX, *ARGOCD):
        assert re.search(rf"!! {re.escape(name)} +missing", out), name
    assert "not created: `compare cluster up` starts it" in out
    assert "chromium     /opt/chromium/chrome" in out
    assert out.rstrip().splitlines()[-1].startswith("not ready: etcd, kube-apiserver")


def test_reports_go_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`compare report` and `check` find the newest run under ./reports, wherever that is."""
    assert not REPORTS_DIR.is_absolute()
    monkeypatch.chdir(tmp_path)
    write_run(tmp_path / "reports", fixture_json("single-trial"), "20261205T140000Z-0a1b")
    report = runner.invoke(app, ["report"])
    assert report.exit_code == 0, report.output
    assert report.stdout.startswith("run 20261205T140000Z-0a1b")
    check = runner.invoke(app, ["check"])
    assert "on reports/20261205T140000Z-0a1b/results.json" in check.stdout.splitlines()[0]
    help_text = runner.invoke(app, ["run", "--help"]).stdout
    assert "[default: reports]" in help_text


def test_shipped_folders_exist_in_the_source_tree() -> None:
    assert IN_SOURCE_TREE
    for entry in SHIPPED:
        assert (DATA_ROOT / entry).exists(), entry


def test_generators_never_write_into_an_installed_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from compare.webapp import schemas, values_schema
    from webapp_operator import manifests

    monkeypatch.setattr(schemas, "IN_SOURCE_TREE", False)
    monkeypatch.setattr(manifests, "IN_SOURCE_TREE", False)
    target = tmp_path / "values.schema.json"
    target.write_text("{}\n")
    monkeypatch.setattr(values_schema, "VALUES_SCHEMA_PATH", target)
    assert values_schema.main([]) == 2
    assert target.read_text() == "{}\n"
    assert "rewrites files of the source tree" in capsys.readouterr().err
    # Another --output is the user's own file: written.
    mine = tmp_path / "mine.json"
    assert values_schema.main(["--output", str(mine)]) == 0
    assert mine.read_text().startswith("{")
    generated = tmp_path / "role.yaml"
    generated.write_text("old\n")
    monkeypatch.setattr(manifests, "generated_files", lambda: {generated: lambda: "new\n"})
    assert manifests.main([]) == 2
    assert generated.read_text() == "old\n"
    assert manifests.main(["--check"]) == 1  # --check only reads: it still tells


def test_an_installed_package_builds_from_a_copy_in_the_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Go (GOFLAGS=-mod=mod) may touch a go.sum: an installed tools/ is copied, never used."""
    from compare.cluster import binaries

    cache = tmp_path / "cache"
    monkeypatch.setenv("COMPARE_CACHE_DIR", str(cache))
    monkeypatch.setattr(binaries, "IN_SOURCE_TREE", False)
    with binaries._tools_dir() as staged:
        assert staged.is_relative_to(cache)
        copied = sorted(str(p.relative_to(staged)) for p in staged.rglob("*") if p.is_file())
        shipped = sorted(str(p.relative_to(TOOLS_DIR)) for p in TOOLS_DIR.rglob("*") if p.is_file())
        assert copied == shipped
        assert (staged / "build.sh").read_bytes() == (TOOLS_DIR / "build.sh").read_bytes()
    assert list(cache.iterdir()) == []  # the copy is gone afterwards
    monkeypatch.setattr(binaries, "IN_SOURCE_TREE", True)
    with binaries._tools_dir() as in_place:
        assert in_place == TOOLS_DIR


def test_build_progress_prints_whole_lines_and_shows_the_running_step(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from compare.cli.setup_cmd import BuildProgress

    with BuildProgress() as progress:
        progress("Building the embedded control plane into /c/bin\n  etcd        ")
        assert progress.partial == "  etcd        "
        progress("")  # a tick
        progress("done (12s)\n  kube-apiserver   ")
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "Building the embedded control plane into /c/bin",
        "  etcd        done (12s)",
        "  kube-apiserver",
    ]


def test_the_build_script_output_errors_and_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The script's stdout comes as it is written; a failure is its last stderr line; a hung
    build is stopped at the deadline, its whole process group with it."""
    from compare.cluster import binaries

    script = tmp_path / "build.sh"
    script.write_text('printf "  etcd  "; sleep 0.2; echo "done (1s)"\n')
    chunks: list[str] = []
    binaries._run_script(["bash", str(script)], "the test binaries", chunks.append)
    assert "".join(chunks) == "  etcd  done (1s)\n"
    script.write_text(
        'echo "go: downloading x" >&2\necho "tools/build.sh: build failed" >&2\nexit 1\n'
    )
    with pytest.raises(CompareError, match=r"^building the test binaries failed: tools/build.sh"):
        binaries._run_script(["bash", str(script)], "the test binaries", None)
    pid_file = tmp_path / "child.pid"
    script.write_text(f"sleep 60 & echo $! > {pid_file}\nwait\n")
    monkeypatch.setattr(binaries, "BUILD_TIMEOUT_S", 1.0)
    with pytest.raises(CompareError, match=r"took longer than 0 min and was stopped"):
        binaries._run_script(["bash", str(script)], "the test binaries", chunks.append)
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and Path(f"/proc/{child}").exists():
        if Path(f"/proc/{child}/stat").read_text().split()[2] == "Z":
            break
        time.sleep(0.05)
    stat_file = Path(f"/proc/{child}/stat")
    assert not stat_file.exists() or stat_file.read_text().split()[2] == "Z"
