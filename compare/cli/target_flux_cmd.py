"""`--target FILE`, Flux arm: `compare deploy flux`, `compare undeploy flux` and the target's
HelmRelease row of `compare status` (`compare.deploy.target_flux`).

As for the Helm arm (`compare.cli.target_cmd`), everything that can be checked without a
cluster - the target file, its namespace, `helm template` of its chart - is checked first:
a bad target file is one line and nothing is created.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from compare.cli.common import console, print_warning, target_from
from compare.cli.target_cmd import target_namespace_of
from compare.deploy.flux import format_interval, read_helm_release, remove_flux
from compare.deploy.flux_install import ensure_flux_binaries
from compare.deploy.rollback import Rollback
from compare.deploy.target_flux import (
    deploy_target_flux,
    flux_arm,
    undeploy_target_flux,
)
from compare.deploy.target_helm import render_target
from compare.target import HelmInstall, Target, load_target


def _flux_arm(
    path: Path, ctx: typer.Context, namespace: str | None
) -> tuple[Target, HelmInstall, str]:
    """The loaded target, its `flux` key and the namespace."""
    target = load_target(path)
    return target, flux_arm(target), target_namespace_of(target, ctx, namespace)


def deploy_target_flux_command(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    interval: float,
    timeout: float,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare deploy flux --target FILE`: a HelmRelease of the target's chart; wait until it
    is Ready and its release's manifest holds closed-world. A failed deploy removes the
    HelmRelease and the namespace it created."""
    target, install, namespace = _flux_arm(path, ctx, namespace)
    render_target(target, install, namespace)
    ensure_flux_binaries()
    cluster = target_from(ctx, kubeconfig, context)
    started = time.monotonic()
    api = cluster.api_client()
    try:
        existed = read_helm_release(api, namespace, install.release) is not None
    finally:
        api.close()

    def remove() -> None:
        undeploy_target_flux(cluster, install, namespace, timeout=timeout)

    with (
        Rollback(cluster, namespace, existed=existed, remove=remove, warn=print_warning),
        console.status(f"deploying {install.release} with Flux ..."),
    ):
        desired = deploy_target_flux(
            cluster, target, install, namespace, interval=interval, timeout=timeout
        )
    console.print(
        f"HelmRelease {namespace}/{install.release} (chart {install.chart.describe()}, interval"
        f" {format_interval(interval)}, drift detection enabled): Ready, desired state holds"
        f" after {time.monotonic() - started:.1f}s"
    )
    kinds = sorted({item.kind for item in desired.items})
    console.print(f"  {len(desired.items)} objects: {', '.join(kinds)}")
    console.print(f"  target:    {path}")
    console.print(f"  on:        {cluster.describe()}")


def undeploy_target_flux_command(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    timeout: float,
    stop_flux: bool,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare undeploy flux --target FILE`: delete the target's HelmRelease and its source."""
    _, install, namespace = _flux_arm(path, ctx, namespace)
    cluster = target_from(ctx, kubeconfig, context)
    started = time.monotonic()
    with console.status(f"removing HelmRelease {install.release} ..."):
        removed = undeploy_target_flux(cluster, install, namespace, timeout=timeout)
    if removed:
        console.print(
            f"HelmRelease {namespace}/{install.release} removed: the release, its source and"
            f" every object gone after {time.monotonic() - started:.1f}s"
        )
    else:
        console.print(
            f"no HelmRelease {install.release!r} in namespace {namespace!r}: nothing to remove"
        )
    if stop_flux:
        remove_flux(cluster)
        console.print("Flux controllers and chart server stopped; their identities deleted")
