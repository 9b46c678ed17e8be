"""The build hook that makes a wheel complete: the repository's data folders travel as
package data under compare/_data/ (see compare/paths.py), built from the source folders at
build time. Everything else is declared in pyproject.toml."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
# Never package data: bytecode and editor/OS litter that may sit in a working tree.
IGNORED = shutil.ignore_patterns("__pycache__", "*.py[cod]", ".DS_Store", "*~", "*.swp")


def _shipped() -> tuple[str, ...]:
    """compare.paths.SHIPPED, read without importing the package (its dependencies are not
    installed in the isolated build environment)."""
    tree = ast.parse((HERE / "compare" / "paths.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "SHIPPED" for t in node.targets
        ):
            value = ast.literal_eval(node.value)
            return tuple(str(v) for v in value)
    raise RuntimeError("compare/paths.py defines no SHIPPED tuple")


class BuildPyWithData(build_py):
    """build_py, then the data folders copied into the build's compare/_data/."""

    def run(self) -> None:
        super().run()
        # An editable install reads the folders in place (compare.paths falls back to them).
        if getattr(self, "editable_mode", False):
            return
        data = Path(self.build_lib) / "compare" / "_data"
        if data.exists():
            shutil.rmtree(data)
        for entry in _shipped():
            source = HERE / entry
            target = data / entry
            if source.is_dir():
                shutil.copytree(source, target, ignore=IGNORED)
            elif source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
            else:
                raise RuntimeError(f"{entry}: listed in compare.paths.SHIPPED but missing")


setup(cmdclass={"build_py": BuildPyWithData})
