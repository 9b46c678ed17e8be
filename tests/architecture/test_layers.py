"""The layers of docs/architecture.md, enforced on the source: a lower layer never imports a
higher one, packages import each other without cycles, and the operator (`webapp_operator`)
needs no more of `compare` than the shared model, judge and API mechanics its image copies."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.architecture.imports import ROOT, cycles, imports, module_files, unit

# Lowest first. A package may import its own layer and those below, never one above. A new
# package fails `test_every_package_has_a_layer` until it is placed here and in the doc.
LAYERS: list[tuple[str, frozenset[str]]] = [
    (
        "base",
        frozenset(
            {
                "compare",
                "compare.errors",
                "compare.inert",
                "compare.paths",
                "compare.inputfile",
                "compare.lazy",
                "compare.outputfile",
            }
        ),
    ),
    ("kube", frozenset({"compare.kube"})),
    ("model", frozenset({"compare.cluster", "compare.webapp"})),
    ("judge", frozenset({"compare.judge", "compare.target", "compare.results"})),
    ("operator", frozenset({"webapp_operator"})),
    ("deploy", frozenset({"compare.deploy"})),
    # `compare.approaches` (one module per approach over deploy) belongs here whether or not
    # it exists yet: above deploy, below run and the CLI.
    ("experiments", frozenset({"compare.approaches", "compare.chaos"})),
    ("run", frozenset({"compare.run"})),
    ("verdicts", frozenset({"compare.check", "compare.report"})),
    ("cli", frozenset({"compare.cli"})),
]
RANK = {name: rank for rank, (_, names) in enumerate(LAYERS) for name in names}

# Imports that go up a layer on purpose, each with its reason.
EXCEPTIONS = {
    ("compare", "compare.chaos"): (
        "`chaos discover` calls the top package's discover(), which imports the extension"
        " lazily (inside the function)"
    ),
}

# What of `compare` the operator may import (and its image copies): the shared WebApp model,
# the judge, the API mechanics and the helpers they stand on.
OPERATOR_NEEDS = frozenset(
    {
        "compare",
        "compare.errors",
        "compare.inputfile",
        "compare.judge",
        "compare.kube",
        "compare.lazy",
        "compare.paths",
        "compare.webapp",
    }
)


def _unit_edges() -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {}
    for found in imports():
        source, target = unit(found.module), unit(found.target)
        if source != target and (source, target) not in EXCEPTIONS:
            edges.setdefault(source, set()).add(target)
    return edges


def test_every_package_has_a_layer() -> None:
    units = {unit(module) for module in module_files()}
    assert sorted(units - set(RANK)) == []


def test_no_layer_imports_a_higher_one() -> None:
    upward = sorted(
        f"{found.module}:{found.line} imports {found.target}"
        f" ({unit(found.module)} may not use {unit(found.target)})"
        for found in imports()
        if (unit(found.module), unit(found.target)) not in EXCEPTIONS
        and RANK.get(unit(found.target), -1) > RANK.get(unit(found.module), len(LAYERS))
    )
    assert upward == []


def test_no_import_cycle_between_packages() -> None:
    assert cycles(_unit_edges()) == []


def test_no_import_cycle_between_modules() -> None:
    """At import time (module-level imports): a cycle there is an import-order accident."""
    edges: dict[str, set[str]] = {}
    for found in imports():
        if found.top_level and found.module != found.target:
            edges.setdefault(found.module, set()).add(found.target)
    assert cycles(edges) == []


def operator_closure() -> set[str]:
    """Every module of `compare` the operator's modules import, transitively (with the
    packages whose `__init__` runs on the way)."""
    by_module: dict[str, set[str]] = {}
    for found in imports():
        if (unit(found.module), unit(found.target)) not in EXCEPTIONS:
            by_module.setdefault(found.module, set()).add(found.target)
    files = module_files()
    todo = [m for m in files if m.startswith("webapp_operator")]
    seen: set[str] = set()
    while todo:
        module = todo.pop()
        if module in seen:
            continue
        seen.add(module)
        parts = module.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
        todo.extend(by_module.get(module, ()))
    return {m for m in seen if m.split(".")[0] == "compare"}


def test_the_operator_needs_only_the_shared_part() -> None:
    assert sorted({unit(m) for m in operator_closure()} - OPERATOR_NEEDS) == []


def _copied() -> set[str]:
    """What of compare/ the operator's Dockerfile copies into its image."""
    text = (ROOT / "operator" / "Dockerfile").read_text(encoding="utf-8")
    copied: set[str] = set()
    for line in text.splitlines():
        words = line.split()
        if words[:1] == ["COPY"] and not any(w.startswith("--from") for w in words):
            copied.update(w.rstrip("/") for w in words[1:-1] if w.startswith("compare"))
    return copied


def _image_paths(needed: set[str]) -> set[str]:
    """The COPY sources these modules need: a sub-package as its directory, a module of the
    top package as its file (the top package as its `__init__.py`)."""
    files = module_files()
    paths = set()
    for module in needed:
        path = files[unit(module)].relative_to(ROOT)
        paths.add(
            str(path.parent if unit(module) != "compare" and path.name == "__init__.py" else path)
        )
    return paths


def test_the_operator_image_copies_exactly_what_it_imports() -> None:
    assert _copied() == _image_paths(operator_closure())


def test_the_operator_imports_with_only_the_copied_part(tmp_path: Path) -> None:
    """Every module of webapp_operator imports from a tree holding only what the image
    copies (the rest of compare/ absent), as in the image."""
    for source in _copied():
        (tmp_path / source).parent.mkdir(parents=True, exist_ok=True)
        if (ROOT / source).is_dir():
            shutil.copytree(
                ROOT / source, tmp_path / source, ignore=shutil.ignore_patterns("__pycache__")
            )
        else:
            shutil.copy2(ROOT / source, tmp_path / source)
    shutil.copytree(
        ROOT / "operator" / "webapp_operator",
        tmp_path / "operator" / "webapp_operator",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    # Not __main__: importing it runs the operator.
    modules = sorted(
        m
        for m in module_files()
        if m.startswith("webapp_operator") and m.split(".")[-1] != "__main__"
    )
    script = (
        "import importlib, sys, compare\n"
        f"assert compare.__file__.startswith({str(tmp_path)!r}), compare.__file__\n"
        f"for name in {modules!r}:\n"
        "    importlib.import_module(name)\n"
        "print('ok')\n"
    )
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{tmp_path / 'operator'}"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "ok"


@pytest.mark.parametrize("layer", [name for name, _ in LAYERS])
def test_the_doc_lists_each_layer(layer: str) -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert re.search(rf"^\s*{re.escape(layer)}\b", doc, re.MULTILINE), layer
