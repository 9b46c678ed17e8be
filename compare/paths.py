"""Where things live: the source tree, the binary cache and the per-user state directory."""

from __future__ import annotations

import os
from pathlib import Path

# The package sits at <repo>/compare; charts, experiments and the operator are siblings.
REPO_ROOT = Path(__file__).resolve().parent.parent
TOOLS_DIR = REPO_ROOT / "tools"
CHARTS_DIR = REPO_ROOT / "charts"
EXPERIMENTS_DIR = REPO_ROOT / "experiments"
OPERATOR_DIR = REPO_ROOT / "operator"
EXAMPLES_DIR = REPO_ROOT / "examples"
REPORTS_DIR = REPO_ROOT / "reports"


def cache_dir() -> Path:
    """The cache shared by every clone: built binaries and embedded clusters."""
    explicit = os.environ.get("COMPARE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "helm-vs-operator"


def bin_dir() -> Path:
    return cache_dir() / "bin"
