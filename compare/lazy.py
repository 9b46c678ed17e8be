"""Names of a package imported from their modules on first use (PEP 562's module `__getattr__`).

A package whose modules are costly to import (the kubernetes client takes ~0.2 s) lists where
each of its names lives and sets `__getattr__ = lazy_names(__name__, WHERE)`: a command that
never touches a name never imports its module.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """The package's `__getattr__`: `name` imported from `package.<where[name]>`, then kept in
    the package's namespace (the next look finds it there)."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
