"""The wheel and the sdist as `python -m build` makes them, checked against the source tree; the
wheel installed into a fresh virtualenv outside the repository and run from an empty directory
against its own embedded cluster (the cached binaries, COMPARE_CACHE_DIR)."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import time
import venv
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

import compare
from compare.paths import SHIPPED, cache_dir
from tests.conftest import TEST_CLUSTER

REPO = Path(__file__).resolve().parents[2]
# setup.py's IGNORED: bytecode and editor/OS litter are never package data.
IGNORED_DIRS = {"__pycache__"}
IGNORED_SUFFIXES = (".pyc", ".pyo", ".DS_Store", "~", ".swp")
BUILD_TIMEOUT_S = 600
INSTALL_TIMEOUT_S = 600
RUN_TIMEOUT_S = 900
# What the mission claims for the two faults of the run below.
POLICY = """\
version: 1
expectations:
  - approach: operator
    faults: [pod-delete-one, image-change]
    expect: heals
  - approach: helm
    faults: [pod-delete-one]
    expect: heals
  - approach: helm
    faults: [image-change]
    expect: does-not-heal
"""


def _files(root: Path, entry: str) -> set[str]:
    """Every file of a shipped entry (a folder or one file), relative to the repository."""
    path = root / entry
    if path.is_file():
        return {entry}
    found = set()
    for directory, dirs, names in os.walk(path):
        dirs[:] = [d for d in dirs if d not in IGNORED_DIRS]
        for name in names:
            if not name.endswith(IGNORED_SUFFIXES):
                found.add(str((Path(directory) / name).relative_to(root)))
    return found


def _modules() -> set[str]:
    """The Python modules a wheel must hold, as paths inside it."""
    found = {f for f in _files(REPO, "compare") if f.endswith(".py")}
    found |= {
        str(Path(f).relative_to("operator"))
        for f in _files(REPO, "operator/webapp_operator")
        if f.endswith(".py")
    }
    return found


@dataclass(frozen=True)
class Dists:
    wheel: Path
    sdist: Path
    seconds: float


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    """The sdist, then the wheel built from it (`python -m build`): a wheel that needs a file
    the sdist lacks fails to build or fails the checks below."""
    out = tmp_path_factory.mktemp("dist")
    start = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT_S,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    wheels = list(out.glob("*.whl"))
    sdists = list(out.glob("*.tar.gz"))
    assert len(wheels) == 1 and len(sdists) == 1, sorted(p.name for p in out.iterdir())
    return Dists(wheels[0], sdists[0], time.monotonic() - start)


def test_wheel_holds_every_file_of_the_source_folders(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as wheel:
        names = set(wheel.namelist())
    data = {n.removeprefix("compare/_data/") for n in names if n.startswith("compare/_data/")}
    expected = set().union(*(_files(REPO, entry) for entry in SHIPPED))
    assert sorted(expected - data) == [], "missing from the wheel"
    assert sorted(data - expected) == [], "in the wheel, not in the source folders"
    assert sorted(_modules() - names) == [], "modules missing from the wheel"
    # Nothing else at the top: no tests, no stray packages (and never one named `operator`).
    tops = {n.split("/")[0] for n in names}
    assert tops == {"compare", "webapp_operator", wheel_dist_info(dists.wheel)}
    assert dists.wheel.name == f"helm_vs_operator-{compare.__version__}-py3-none-any.whl"


def wheel_dist_info(wheel: Path) -> str:
    name, version = wheel.name.split("-")[:2]
    return f"{name}-{version}.dist-info"


def test_sdist_keeps_the_source_layout(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as sdist:
        names = {m.name.split("/", 1)[1] for m in sdist.getmembers() if m.isfile()}
    expected = set().union(*(_files(REPO, entry) for entry in SHIPPED))
    expected |= {f for f in _files(REPO, "compare") if f.endswith(".py")}
    expected |= {f for f in _files(REPO, "operator/webapp_operator") if f.endswith(".py")}
    expected |= {"pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "CHANGELOG.md"}
    assert sorted(expected - names) == []


def test_metadata_passes_twine_check(dists: Dists) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(dists.wheel), str(dists.sdist)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2, result.stdout


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under root (bytecode caches aside) with its size and mtime."""
    found = {}
    for directory, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in IGNORED_DIRS]
        for name in names:
            path = Path(directory) / name
            info = path.lstat()
            found[str(path.relative_to(root))] = (info.st_size, info.st_mtime_ns)
    return found


@pytest.fixture(scope="module")
def installed(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A fresh virtualenv outside the repository with the wheel (and its dependencies)."""
    env_dir = tmp_path_factory.mktemp("venv")
    assert not env_dir.is_relative_to(REPO)
    venv.EnvBuilder(with_pip=True, clear=True).create(env_dir)
    result = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", str(dists.wheel)],
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    yield env_dir


@pytest.mark.cluster
def test_installed_wheel_runs_from_an_empty_directory(
    installed: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """--version, a run of two faults on both approaches, its report and its check: in an empty
    directory, with a fresh HOME; nothing written but ./reports and the cache."""
    work = tmp_path_factory.mktemp("work")
    policy = tmp_path_factory.mktemp("policy") / "two-faults.yaml"
    policy.write_text(POLICY)
    home = tmp_path_factory.mktemp("home")
    name = f"{TEST_CLUSTER}-pkg"
    env = {
        **os.environ,
        "HOME": str(home),
        "COMPARE_CACHE_DIR": str(cache_dir()),  # the cached binaries: no build here
        "COMPARE_CLUSTER_NAME": name,
        "PATH": f"{installed / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    for variable in ("VIRTUAL_ENV", "PYTHONPATH", "KUBECONFIG", "XDG_CACHE_HOME"):
        env.pop(variable, None)
    site = Path(
        subprocess.run(
            [str(installed / "bin" / "python"), "-c", "import compare; print(compare.__file__)"],
            capture_output=True, text=True, timeout=60, check=True, env=env, cwd=work,
        ).stdout.strip()
    ).parent.parent  # fmt: skip
    assert not site.is_relative_to(REPO)
    before = _snapshot(site)

    def compare_(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(installed / "bin" / "compare"), *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env=env,
            cwd=work,
        )

    try:
        version = compare_("--version")
        assert version.returncode == 0, version.stderr
        assert version.stdout.startswith(f"compare (helm-vs-operator) {compare.__version__}\n")
        run = compare_(
            "run", "-a", "helm", "-a", "operator", "-e", "pod-delete-one", "-e", "image-change",
            timeout=RUN_TIMEOUT_S,
        )  # fmt: skip
        assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
        runs = sorted((work / "reports").iterdir())
        assert len(runs) == 1, runs
        assert (runs[0] / "results.json").is_file()
        report = compare_("report")
        assert report.returncode == 0, report.stderr
        assert report.stdout.startswith(f"run {runs[0].name}")
        for cell in ("pod-delete-one", "image-change", "helm", "operator"):
            assert cell in report.stdout
        # The shipped policy (experiments/policy.yaml) names faults this two-fault run has
        # not: those are its only violations; the cells the run has all hold.
        check = compare_("check", "-v")
        assert check.returncode == 1, check.stdout + check.stderr
        shipped_policy = site / "compare" / "_data" / "experiments" / "policy.yaml"
        first = check.stdout.splitlines()[0]
        assert first == f"policy {shipped_policy} on reports/{runs[0].name}/results.json"
        judged = [line for line in check.stdout.splitlines() if line.startswith(("FAIL", "ok"))]
        for line in judged:
            if line.startswith("FAIL"):
                assert "is not in this run" in line or "does not apply" in line, line
        cells = [
            f"{a}/{f}:" for a in ("helm", "operator") for f in ("pod-delete-one", "image-change")
        ]
        present = [line for line in judged if any(cell in line for cell in cells)]
        assert len(present) == 4 and all(line.startswith("ok ") for line in present), judged
        # A policy for exactly these cells holds: the gate passes.
        check = compare_("check", "--policy", str(policy))
        assert check.returncode == 0, check.stdout + check.stderr
        assert check.stdout.splitlines()[-1] == "policy holds: 4 checks passed"
    finally:
        down = compare_("cluster", "down")
        assert down.returncode == 0, down.stderr
    assert sorted(p.name for p in work.iterdir()) == ["reports"]
    assert _snapshot(site) == before, "the installed package was written to"
    # The fresh HOME: untouched but for Go's own usage counters (the go command writes them
    # to its config dir whatever it is asked; `go env GOVERSION` checks the toolchain).
    written = sorted(str(p.relative_to(home)) for p in home.rglob("*") if p.is_file())
    assert [f for f in written if not f.startswith(".config/go/telemetry/")] == []
