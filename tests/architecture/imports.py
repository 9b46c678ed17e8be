"""The import graph of `compare` and `webapp_operator`, read from the source (AST), not by
importing: every `import` statement anywhere in a module, function-level ones included."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SOURCES = {"compare": ROOT / "compare", "webapp_operator": ROOT / "operator" / "webapp_operator"}


@dataclass(frozen=True)
class Import:
    module: str  # the importing module
    target: str  # the imported module (a name imported from a package resolved to its module)
    line: int
    top_level: bool  # at module level (runs at import time), not inside a function


def module_files() -> dict[str, Path]:
    """Every module of the two packages by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for top, directory in SOURCES.items():
        for path in sorted(directory.rglob("*.py")):
            parts = [top, *path.relative_to(directory).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_package(name: str, files: dict[str, Path]) -> bool:
    return name in files and files[name].name == "__init__.py"


def _resolve(node: ast.ImportFrom, module: str, files: dict[str, Path]) -> str:
    if node.level == 0:
        return node.module or ""
    base = module.split(".")
    if not _is_package(module, files):
        base = base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _walk(tree: ast.AST, top_level: bool = True) -> Iterator[tuple[ast.AST, bool]]:
    for child in ast.iter_child_nodes(tree):
        inner = top_level and not isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
        )
        yield child, inner
        yield from _walk(child, inner)


def imports() -> list[Import]:
    """Every import of a module of ours by a module of ours."""
    files = module_files()
    ours = tuple(SOURCES)
    found = []
    for module, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node, top_level in _walk(tree):
            targets: list[str] = []
            line = getattr(node, "lineno", 0)
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                source = _resolve(node, module, files)
                targets = [
                    f"{source}.{alias.name}" if f"{source}.{alias.name}" in files else source
                    for alias in node.names
                ]
            for target in targets:
                if target.split(".")[0] in ours:
                    found.append(Import(module, target, line, top_level))
    return found


def unit(module: str) -> str:
    """The package a module belongs to for layering: `compare.<sub>` for anything inside a
    sub-package or a top-level module of `compare`; the root `compare` itself; all of
    `webapp_operator`."""
    parts = module.split(".")
    if parts[0] == "webapp_operator":
        return "webapp_operator"
    return ".".join(parts[:2])


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return sorted(found)
