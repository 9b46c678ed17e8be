"""What building and running the control plane needs: Go, the pinned versions, the binaries.

Pure queries (no builds): `compare --version`, `compare doctor` and the build's own checks
read them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from compare.errors import CompareError
from compare.paths import TOOLS_DIR, bin_dir, cache_dir

# tools/build.sh, tools/flux/build.sh and tools/argocd/build.sh refuse an older Go (a test keeps
# the four in step).
GO_MIN = (1, 26)
GO_INSTALL_HINT = "install Go >= {min} (https://go.dev/doc/install) and put `go` on PATH"
_PROBE_TIMEOUT_S = 30.0

CONTROL_PLANE = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "kwokctl",
    "helm",
)
FLUX = ("source-controller", "helm-controller")
# The argocd approach's binaries (tools/argocd/build.sh, in the cache's argocd/bin/): the
# multi-call argocd binary and the Helm 3 CLI its repo-server runs.
ARGOCD = ("argocd", "argocd-helm")

# versions.env variable -> the component's name, in the order `compare --version` prints them.
_PINS = (
    ("versions.env", "KUBE_VERSION", "Kubernetes"),
    ("versions.env", "ETCD_VERSION", "etcd"),
    ("versions.env", "KWOK_VERSION", "kwok"),
    ("versions.env", "HELM_VERSION", "helm"),
    ("flux/versions.env", "SOURCE_CONTROLLER_VERSION", "source-controller"),
    ("flux/versions.env", "HELM_CONTROLLER_VERSION", "helm-controller"),
    ("argocd/versions.env", "ARGOCD_VERSION", "argocd"),
    ("argocd/versions.env", "ARGOCD_HELM_VERSION", "argocd-helm"),
)
# Which pin each binary's version must show.
_BINARY_PIN = {
    "etcd": "etcd",
    "kube-apiserver": "Kubernetes",
    "kube-controller-manager": "Kubernetes",
    "kube-scheduler": "Kubernetes",
    "kubectl": "Kubernetes",
    "kwok": "kwok",
    "kwokctl": "kwok",
    "helm": "helm",
    "source-controller": "source-controller",
    "helm-controller": "helm-controller",
    "argocd": "argocd",
    "argocd-helm": "argocd-helm",
}
# How each binary tells its version (the Flux controllers have no flag: `go version -m`).
_VERSION_ARGS = {
    "kubectl": ("version", "--client"),
    "helm": ("version", "--short"),
    "argocd": ("version", "--client"),
    "argocd-helm": ("version", "--short"),
}
# Where a binary is, when not in the cache's bin/ (its name there, under the cache).
_ELSEWHERE = {"argocd": ("argocd", "bin", "argocd"), "argocd-helm": ("argocd", "bin", "helm")}


def binary_path(name: str) -> Path:
    """Where the build puts one binary."""
    where = _ELSEWHERE.get(name)
    return cache_dir().joinpath(*where) if where else bin_dir() / name


def pinned_versions(tools: Path = TOOLS_DIR) -> dict[str, str]:
    """Component name -> pinned version, read from tools/versions.env, tools/flux/versions.env
    and tools/argocd/versions.env (the files the build scripts read)."""
    pins: dict[str, str] = {}
    for file, variable, component in _PINS:
        path = tools / file
        try:
            text = path.read_text()
        except OSError as exc:
            raise CompareError(f"{path}: cannot read ({exc.strerror or exc})") from None
        match = re.search(rf"^{variable}=(\S+)\s*$", text, re.MULTILINE)
        if match is None:
            raise CompareError(f"{path}: no {variable}= line")
        pins[component] = match.group(1)
    return pins


@dataclass(frozen=True)
class GoStatus:
    path: str | None
    version: str | None  # e.g. "go1.26.8"
    problem: str | None  # None: usable for the build

    def describe(self) -> str:
        if self.path is None:
            return "missing"
        return f"{self.version or 'unknown version'} ({self.path})"


def parse_go_version(text: str) -> tuple[int, int] | None:
    """`go1.26.8` (or `go1.27rc1`) -> (1, 26); None when it is not a Go version."""
    match = re.match(r"go(\d+)\.(\d+)", text.strip())
    return (int(match.group(1)), int(match.group(2))) if match else None


def go_status() -> GoStatus:
    """The Go toolchain on PATH and whether it can build the pinned modules."""
    minimum = ".".join(map(str, GO_MIN))
    hint = GO_INSTALL_HINT.format(min=minimum)
    go = shutil.which("go")
    if go is None:
        return GoStatus(None, None, f"no Go toolchain on PATH: {hint}")
    try:
        result = subprocess.run(
            [go, "env", "GOVERSION"],
            capture_output=True,
            text=True,
            timeout=_PROBE_TIMEOUT_S,
            check=False,
            env={**os.environ, "GOTOOLCHAIN": "local"},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return GoStatus(go, None, f"{go} does not run ({exc}): {hint}")
    version = result.stdout.strip()
    parsed = parse_go_version(version)
    if result.returncode != 0 or parsed is None:
        return GoStatus(go, None, f"{go} reports no version: {hint}")
    if parsed < GO_MIN:
        return GoStatus(
            go,
            version,
            f"Go {version} is too old (the pinned modules need Go >= {minimum}): {hint}",
        )
    return GoStatus(go, version, None)


def missing_binaries(names: tuple[str, ...] = CONTROL_PLANE + FLUX) -> list[str]:
    return [name for name in names if not os.access(bin_dir() / name, os.X_OK)]


@dataclass(frozen=True)
class BinaryStatus:
    name: str
    path: Path
    present: bool
    version: str | None  # what the binary reports, first line
    pinned: str
    matches: bool | None  # None: the version could not be read

    def describe(self) -> str:
        if not self.present:
            return "missing"
        if self.matches is None:
            return f"present, version unknown (pinned {self.pinned})"
        if self.matches:
            return self.pinned
        return f"{self.version!r} but {self.pinned} is pinned: run `compare setup` to rebuild"


def binary_status(name: str, pins: dict[str, str], go: str | None) -> BinaryStatus:
    """One cached binary: present, and whether the version it reports is the pinned one."""
    path = binary_path(name)
    pinned = pins[_BINARY_PIN[name]]
    if not os.access(path, os.X_OK):
        return BinaryStatus(name, path, False, None, pinned, None)
    if name in FLUX:
        if go is None:
            return BinaryStatus(name, path, True, None, pinned, None)
        args = [go, "version", "-m", str(path)]
    else:
        args = [str(path), *_VERSION_ARGS.get(name, ("--version",))]
    try:
        result = subprocess.run(
            args, capture_output=True, text=True, timeout=_PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return BinaryStatus(name, path, True, None, pinned, None)
    output = result.stdout + result.stderr
    if name in FLUX:
        # The controller's module and version: `mod <module> <version> <hash>`.
        found = re.search(
            rf"^\s*(?:mod|dep)\s+github\.com/fluxcd/{name}\s+(\S+)", output, re.MULTILINE
        )
        version = found.group(1) if found else None
    else:
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        version = lines[0] if lines else None
    if version is None:
        return BinaryStatus(name, path, True, None, pinned, None)
    # etcd reports 3.6.16, the others v1.36.3 / v0.8.0: compare without the leading v.
    matches = re.search(rf"(?<![\w.])v?{re.escape(pinned.lstrip('v'))}(?![\w.])", version)
    return BinaryStatus(name, path, True, version, pinned, matches is not None)
