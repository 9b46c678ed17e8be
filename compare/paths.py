"""Where things live: the toolkit's data, the run reports, the binary cache.

The data (charts, experiments, examples, the operator's manifests, the Go modules in tools/,
the JSON schemas) sits in the repository's top-level folders. A wheel carries the same folders
as package data under `compare/_data/` (setup.py copies them at build time), so one layout
serves both: DATA_ROOT is the repository in a clone (or an editable install) and
`compare/_data` in an installed wheel.
"""

from __future__ import annotations

import os
from importlib.resources import files
from pathlib import Path

from compare.errors import CompareError

_SOURCE_ROOT = Path(__file__).resolve().parent.parent


def _data_root() -> Path:
    packaged = files("compare") / "_data"
    if not packaged.is_dir():
        return _SOURCE_ROOT
    # helm, kubectl and bash read these folders by path: the package must be on disk (a wheel
    # installed by pip or pipx is), not inside a zip archive.
    if not isinstance(packaged, Path):
        raise CompareError(f"the toolkit's data must be on disk, not in an archive: {packaged}")
    return packaged.resolve()


DATA_ROOT = _data_root()
# True in a clone: the generators (`make manifests`) may rewrite files there, never in a wheel.
IN_SOURCE_TREE = DATA_ROOT == _SOURCE_ROOT
REPO_ROOT = DATA_ROOT  # the name the older modules and the tests use
TOOLS_DIR = DATA_ROOT / "tools"
CHARTS_DIR = DATA_ROOT / "charts"
EXPERIMENTS_DIR = DATA_ROOT / "experiments"
OPERATOR_DIR = DATA_ROOT / "operator"
EXAMPLES_DIR = DATA_ROOT / "examples"
# The WebApp every command deploys unless given --app.
DEFAULT_APP = EXAMPLES_DIR / "webapp.yaml"
SCHEMAS_DIR = DATA_ROOT / "docs"
# Relative on purpose: runs go to ./reports of the working directory (in a clone that is the
# repository root, as `make demo` runs there), never into the installed package.
REPORTS_DIR = Path("reports")

# What a wheel carries under compare/_data/, relative to the repository root: whole folders,
# or single files. setup.py builds the package data from this list; the packaging test checks
# that a built wheel holds every file of it.
SHIPPED = (
    "charts",
    "docs/target.schema.json",
    "examples",
    "experiments",
    "operator/config",
    "tools",
)


# The generators (`make manifests`) rewrite files of a clone; an installed package is never
# written to.
SOURCE_TREE_ONLY = (
    "it rewrites files of the source tree: run it in a clone of the repository"
    f" (this toolkit is installed, its data in {DATA_ROOT})"
)


def home_dir() -> Path:
    """The user's home directory; CompareError when there is none (HOME unset and no home in
    the user database, as in many containers: pathlib raises a RuntimeError there)."""
    try:
        return Path.home()
    except (RuntimeError, KeyError):
        raise CompareError(
            f"no home directory (HOME is unset and uid {os.getuid()} has none);"
            " set HOME, or COMPARE_CACHE_DIR for the toolkit's cache"
        ) from None


def cache_dir() -> Path:
    """The cache shared by every clone: built binaries and embedded clusters."""
    explicit = os.environ.get("COMPARE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(home_dir() / ".cache")
    return Path(base) / "helm-vs-operator"


def check_cache_dir() -> Path:
    """The cache directory (binaries, clusters, logs), when it is one or can be made: a path
    that is a file read as "not created" or failed later as a build error."""
    cache = cache_dir()
    for path in [cache, *cache.parents]:
        if path.exists():
            if not path.is_dir():
                raise CompareError(
                    f"cache directory {cache}: {path} is not a directory (COMPARE_CACHE_DIR?)"
                )
            break
    return cache


def bin_dir() -> Path:
    return cache_dir() / "bin"
