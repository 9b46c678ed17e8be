"""The approaches' rooms: each approach is one package of `compare.approaches`
(`compare/approaches/<name>/`) that imports no other approach's package, and nothing else in
`compare` reaches into one (the registry, `compare.approaches`, is the way in). The interface
an approach implements (`INTERFACE`) imports no implementation: no approach's package, no
deploy mechanism."""

from __future__ import annotations

from tests.architecture.imports import ROOT, Import, imports

APPROACHES = ROOT / "compare" / "approaches"
PACKAGES = sorted(p.name for p in APPROACHES.iterdir() if (p / "__init__.py").is_file())


def _package(module: str) -> str | None:
    """The approach package a module belongs to (None: it is in none)."""
    parts = module.split(".")
    if parts[:2] == ["compare", "approaches"] and len(parts) > 2 and parts[2] in PACKAGES:
        return parts[2]
    return None


def _crossing(found: list[Import]) -> list[str]:
    return [
        f"{i.module}:{i.line} imports {i.target}"
        for i in found
        if _package(i.target) is not None
        and _package(i.module) != _package(i.target)
        and i.module != "compare.approaches"  # the registry lists them
    ]


# The small interfaces, the composed approach and the CLI's object of its commands.
INTERFACE = tuple(f"compare.approaches.{m}" for m in ("contract", "base", "commands"))
# What of `compare.deploy` they may name: the one deploy-timeout default (the package's) and
# the type of a `compare status` row.
NOT_IMPLEMENTATION = ("compare.deploy", "compare.deploy.rows")


def _implementation(found: list[Import]) -> list[str]:
    return [
        f"{i.module}:{i.line} imports {i.target}"
        for i in found
        if i.module in INTERFACE
        and (_package(i.target) is not None or i.target.startswith("compare.deploy"))
        and i.target not in NOT_IMPLEMENTATION
    ]


def test_the_interface_imports_no_implementation() -> None:
    assert _implementation(imports()) == []


def test_the_check_finds_an_implementation_in_the_interface() -> None:
    forged = [
        Import("compare.approaches.base", "compare.deploy.chart_target", 3, True),
        Import("compare.approaches.contract", "compare.approaches.helm.status", 5, False),
        Import("compare.approaches.commands", "compare.deploy", 7, True),
        Import("compare.approaches.charted", "compare.deploy.charts", 9, True),
    ]
    assert _implementation(forged) == [
        "compare.approaches.base:3 imports compare.deploy.chart_target",
        "compare.approaches.contract:5 imports compare.approaches.helm.status",
    ]


def test_there_is_one_package_per_approach() -> None:
    from compare.approaches import REGISTRY

    assert sorted(a.name for a in REGISTRY) == PACKAGES


def test_no_approach_package_imports_another_and_nothing_reaches_into_one() -> None:
    assert _crossing(imports()) == []


def test_the_check_finds_a_crossing() -> None:
    # The rule above can fail: an import of one approach's module by another is found.
    forged = [
        Import("compare.approaches.flux.arm", "compare.approaches.helm.status", 3, True),
        Import("compare.run.app", "compare.approaches.operator.baseline", 9, True),
        Import("compare.approaches.flux.arm", "compare.approaches.flux.controllers", 4, True),
        Import("compare.approaches", "compare.approaches.argocd", 1, True),
    ]
    assert _crossing(forged) == [
        "compare.approaches.flux.arm:3 imports compare.approaches.helm.status",
        "compare.run.app:9 imports compare.approaches.operator.baseline",
    ]
