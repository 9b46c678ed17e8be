"""Approaches as plugins: small interfaces (`contract`) composed into one `base.Approach` with
the CLI's object of its commands (`commands`), one package per approach, one registry
(`REGISTRY`, in the order runs, reports and `compare status` list them).

What lives here: the interfaces, the chart arm's shared defaults (`charted`), the built-in
approaches (helm, operator, flux, argocd), and the functions that are generic over the registry
(the desired objects of an approach by name, every deployed app, a target file read with
every approach's key, `load_target`, and the built-in target with an arm for each,
`builtin_target`). What does not: the deploy code itself (`compare.deploy`), the trials
(`compare.run`), the CLI (`compare.cli`).
Adding an approach is one module here plus one line in `REGISTRY` (docs/adding-an-approach.md);
an approach from a package of its own (a test's, a plugin's) is added with `register` or, for a
while, `registered` (the CLI, the run and `compare status` see it from then on).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar, overload

from kubernetes import client

from compare.approaches.argocd import Argocd
from compare.approaches.base import Approach, builtin_target
from compare.approaches.commands import CommandOption, Commands
from compare.approaches.contract import (
    Cadence,
    Detector,
    LocalControllers,
    TargetDeploy,
    trial_window,
)
from compare.approaches.contract import describe_settings as generic_settings
from compare.approaches.flux import Flux
from compare.approaches.helm import Helm
from compare.approaches.operator import Operator
from compare.cluster import ClusterTarget
from compare.deploy.rows import DeployedApp
from compare.errors import CompareError
from compare.judge import DesiredObjects, with_api_defaults
from compare.kube import terminating
from compare.target import ArmKey, Target
from compare.target import load_target as load_target_with
from compare.target import parse_target as parse_target_with
from compare.webapp import WebApp

__all__ = [
    "REGISTRY",
    "Approach",
    "Cadence",
    "CommandOption",
    "Commands",
    "Detector",
    "LocalControllers",
    "Registry",
    "TargetDeploy",
    "builtin_target",
    "declaring",
    "default_names",
    "deployed_apps",
    "describe_settings",
    "desired_manifest",
    "desired_objects",
    "fault_targets",
    "forget_cluster",
    "get",
    "load_target",
    "names",
    "parse_target",
    "register",
    "registered",
    "target_arms",
    "trial_window",
    "unregister",
]

# An approach of any class: `register` and `registered` give back what they were given.
A = TypeVar("A", bound=Approach)


class Registry(Sequence[Approach]):
    """The registered approaches, in order: a sequence that changes in place, so that every
    module holding it (`from compare.approaches import REGISTRY`) sees an approach registered
    after its import. A name or short already registered is refused (one line)."""

    def __init__(self, approaches: Iterable[Approach] = ()) -> None:
        self._approaches: tuple[Approach, ...] = ()
        self._lock = threading.Lock()
        for approach in approaches:
            self.register(approach)

    @overload
    def __getitem__(self, index: int) -> Approach: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Approach, ...]: ...
    def __getitem__(self, index: int | slice) -> Approach | tuple[Approach, ...]:
        return self._approaches[index]

    def __len__(self) -> int:
        return len(self._approaches)

    def __repr__(self) -> str:
        return f"Registry({', '.join(a.name for a in self._approaches)})"

    def register(self, approach: A) -> A:
        """Add `approach` after the registered ones (its place in every output)."""
        with self._lock:
            for known in self._approaches:
                for field in ("name", "short"):
                    if getattr(known, field) == getattr(approach, field):
                        raise CompareError(
                            f"approach {approach.name!r}: its {field}"
                            f" {getattr(approach, field)!r} is {known.name!r}'s already"
                        )
            # A new tuple: a reader iterating the old one is not disturbed.
            self._approaches = (*self._approaches, approach)
        return approach

    def unregister(self, name: str) -> Approach:
        """Remove the approach called `name`; the approach removed."""
        with self._lock:
            found = [a for a in self._approaches if a.name == name]
            if not found:
                raise CompareError(f"approach {name!r}: not registered")
            self._approaches = tuple(a for a in self._approaches if a.name != name)
        return found[0]

    @contextlib.contextmanager
    def registered(self, approach: A) -> Iterator[A]:
        """`approach` registered for the block, unregistered after it (whatever happens)."""
        self.register(approach)
        try:
            yield approach
        finally:
            self.unregister(approach.name)


# The registered approaches, in order: the default order of a run's trials, of results.json's
# `settings.approaches`, of the report's columns and of `compare status`'s rows.
REGISTRY = Registry(
    (
        Helm(),
        Operator(),
        Flux(),
        Argocd(),
    )
)


def register(approach: A) -> A:
    """Register an approach defined outside this package (after the others, in that order)."""
    return REGISTRY.register(approach)


def unregister(name: str) -> Approach:
    """Remove a registered approach by name."""
    return REGISTRY.unregister(name)


def registered(approach: A) -> contextlib.AbstractContextManager[A]:
    """`approach` registered for a `with` block (a test's), unregistered after it."""
    return REGISTRY.registered(approach)


def names() -> tuple[str, ...]:
    """The registered approaches' names, in registry order."""
    return tuple(a.name for a in REGISTRY)


def default_names() -> tuple[str, ...]:
    """The approaches of a run without `--approach`, in registry order."""
    return tuple(a.name for a in REGISTRY if a.default)


def get(name: str) -> Approach:
    """The registered approach called `name`; a one-line error naming the known ones."""
    for approach in REGISTRY:
        if approach.name == name:
            return approach
    raise CompareError(f"approach {name!r}: unknown (known: {', '.join(names())})")


def target_arms() -> tuple[ArmKey, ...]:
    """The keys of a target file's arms: one per registered approach, in registry order, of
    the kind it declares (`Approach.arm_key`)."""
    return tuple(a.arm_key() for a in REGISTRY)


def load_target(path: Path) -> Target:
    """A target file, read with the registered approaches' keys (`compare.target.load`)."""
    return load_target_with(path, arms=target_arms())


def parse_target(data: Any, path: Path) -> Target:
    """A target file's data, checked with the registered approaches' keys."""
    return parse_target_with(data, path, arms=target_arms())


def fault_targets() -> dict[str, str]:
    """The evidence targets the registered approaches declare as parts of their own
    (`Approach.fault_targets`), each with what it is."""
    return {t: what for a in REGISTRY for t, what in a.fault_targets.items()}


def declaring(target: str) -> tuple[str, ...]:
    """The registered approaches that declare `target` a part of their own, in registry
    order (none: it is the app's, every approach deploys it)."""
    return tuple(a.name for a in REGISTRY if target in a.fault_targets)


def describe_settings(name: str, settings: Mapping[str, Any]) -> str:
    """An approach's settings as results.json recorded them, as reports show them: in the
    approach's own words when it is registered, else `name key=value, ...`."""
    if name in names():
        return get(name).describe_settings(settings)
    return generic_settings(name, settings)


def forget_cluster(cluster: ClusterTarget) -> None:
    """Drop what a cluster that is going away leaves on this machine: every approach's local
    controllers (Redis included), their tokens, certificates, chart repositories, caches and
    logs. Used by `compare cluster down`, the run's fault cluster, the test session and the
    benchmarks, so that no process or credential outlives its cluster. (State left by a
    cluster deleted some other way is found stale when the next cluster of that name starts
    the processes again.)"""
    for approach in REGISTRY:
        if (controllers := approach.controllers()) is not None:
            controllers.forget(cluster)


def desired_manifest(
    approach: str, webapp: WebApp, namespace: str, *, release: str | None = None
) -> list[dict[str, Any]]:
    """The objects `approach` applies for the built-in target of `webapp` in `namespace` (no
    cluster needed; every registered approach knows them for the built-in target)."""
    target = builtin_target(webapp, release=release)
    objects = get(approach).known_desired(target, namespace)
    if objects is None:
        raise CompareError(f"approach {approach!r}: its desired objects need a cluster")
    return objects


def desired_objects(
    api: client.ApiClient,
    approach: str,
    webapp: WebApp,
    namespace: str,
    *,
    release: str | None = None,
) -> DesiredObjects:
    """`desired_manifest` with the API's defaults, ready for the judge."""
    return with_api_defaults(
        api, namespace, desired_manifest(approach, webapp, namespace, release=release)
    )


def deployed_apps(cluster: ClusterTarget, namespace: str | None) -> list[DeployedApp]:
    """Every app deployed through a registered approach in `namespace` (all when None), in
    registry order."""
    api = cluster.api_client()
    try:
        going = terminating(api, namespace)  # read once, for every approach
        return [app for a in REGISTRY for app in a.status(cluster, api, namespace, going)]
    finally:
        api.close()
