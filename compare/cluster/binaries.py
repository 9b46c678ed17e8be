"""The Go-built executables (control plane, kwok, helm): built once by tools/build.sh."""

from __future__ import annotations

import shutil
import subprocess

from compare.errors import CompareError
from compare.paths import TOOLS_DIR, bin_dir

BINARIES = (
    "etcd",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "kubectl",
    "kwok",
    "kwokctl",
    "helm",
)


def ensure_binaries(*, quiet: bool = True) -> None:
    """Build the binaries if the cache lacks them or the pinned versions changed."""
    if shutil.which("bash") is None:
        raise CompareError("bash is required to build the control-plane binaries")
    args = ["bash", str(TOOLS_DIR / "build.sh")]
    if quiet:
        args.append("--quiet")
    # The script prints its own progress (it takes minutes the first time); pass it through.
    result = subprocess.run(args, check=False, stdout=None, stderr=subprocess.PIPE, text=True)
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        reason = lines[-1] if lines else f"exit code {result.returncode}"
        raise CompareError(f"building the control-plane binaries failed: {reason}")


def tool_path(name: str) -> str:
    """Absolute path of one built executable, building the cache first when needed."""
    if name not in BINARIES:
        raise ValueError(f"unknown tool {name!r}")
    path = bin_dir() / name
    if not path.exists():
        ensure_binaries()
    return str(path)
