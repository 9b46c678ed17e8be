"""Approaches as plugins: one interface (`base.Approach`), one module per approach, one
registry (`REGISTRY`, in the order runs, reports and `compare status` list them).

What lives here: the interface, the built-in approaches (helm, operator, flux) delegating to
their deploy code in `compare.deploy`, and the functions that are generic over the registry
(the desired objects of an approach by name, every deployed app). What does not: the deploy
code itself (`compare.deploy`), the trials (`compare.run`), the CLI (`compare.cli`).
Adding an approach is one module here plus one line in `REGISTRY` (docs/adding-an-approach.md).
"""

from __future__ import annotations

from typing import Any

from kubernetes import client

from compare.approaches.argocd import Argocd
from compare.approaches.base import (
    Approach,
    Cadence,
    CommandOption,
    Detector,
    LocalControllers,
    TargetDeploy,
    trial_window,
)
from compare.approaches.flux import Flux
from compare.approaches.helm import Helm
from compare.approaches.operator import Operator
from compare.cluster import ClusterTarget
from compare.deploy.rows import DeployedApp
from compare.errors import CompareError
from compare.judge import DesiredObjects
from compare.webapp import WebApp

__all__ = [
    "REGISTRY",
    "Approach",
    "Cadence",
    "CommandOption",
    "Detector",
    "LocalControllers",
    "TargetDeploy",
    "default_names",
    "deployed_apps",
    "desired_manifest",
    "desired_objects",
    "forget_cluster",
    "get",
    "names",
    "trial_window",
]

# The registered approaches, in order: the default order of a run's trials, of results.json's
# `settings.approaches`, of the report's columns and of `compare status`'s rows.
REGISTRY: tuple[Approach, ...] = (
    Helm(),
    Operator(),
    Flux(),
    Argocd(),
)


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
    """The objects `approach` applies for `webapp` in `namespace` (no cluster needed)."""
    return get(approach).desired(webapp, namespace, release=release)


def desired_objects(
    api: client.ApiClient,
    approach: str,
    webapp: WebApp,
    namespace: str,
    *,
    release: str | None = None,
) -> DesiredObjects:
    """The approach's objects with the API's defaults, ready for the judge."""
    return get(approach).desired_objects(api, webapp, namespace, release=release)


def deployed_apps(cluster: ClusterTarget, namespace: str | None) -> list[DeployedApp]:
    """Every app deployed through a registered approach in `namespace` (all when None), in
    registry order."""
    api = cluster.api_client()
    try:
        return [app for a in REGISTRY for app in a.status(cluster, api, namespace)]
    finally:
        api.close()
