"""`--target FILE`, Argo CD arm: `compare deploy argocd` and `compare undeploy argocd`
(`compare.deploy.target_argocd`; its `compare status` row is the approach's `target_row`).

As for the other arms, everything that can be checked without a cluster - the target file,
its namespace, `helm template` of its chart, the chart's source - is checked first: a bad
target file is one line and nothing is created.
"""

from __future__ import annotations

import time
from pathlib import Path

import typer

from compare.cli.common import console, print_warning, target_from
from compare.cli.target_cmd import target_namespace_of
from compare.deploy.argocd import deploy_chart_argocd, undeploy_argocd
from compare.deploy.argocd_app import read_application
from compare.deploy.rollback import Rollback
from compare.deploy.target_argocd import argocd_arm, target_argocd_chart
from compare.target import HelmInstall, Target, load_target


def _argocd_arm(
    path: Path, ctx: typer.Context, namespace: str | None
) -> tuple[Target, HelmInstall, str]:
    """The loaded target, its `argocd` key and the namespace."""
    target = load_target(path)
    return target, argocd_arm(target), target_namespace_of(target, ctx, namespace)


def deploy_target_argocd_command(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    timeout: float,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare deploy argocd --target FILE`: an Application of the target's chart; wait until
    it is Synced and Healthy and what it applies holds closed-world. A failed deploy removes
    the Application and the namespace it created."""
    target, install, namespace = _argocd_arm(path, ctx, namespace)
    cluster = target_from(ctx, kubeconfig, context)
    chart = target_argocd_chart(cluster, target, install, namespace)
    started = time.monotonic()
    api = cluster.api_client()
    try:
        existed = read_application(api, namespace, install.release) is not None
    finally:
        api.close()

    def remove() -> None:
        undeploy_argocd(cluster, namespace, release=install.release, timeout=timeout)

    with (
        Rollback(cluster, namespace, existed=existed, remove=remove, warn=print_warning),
        console.status(f"deploying {install.release} with Argo CD ..."),
    ):
        desired = deploy_chart_argocd(cluster, chart, namespace, timeout=timeout)
    console.print(
        f"Application {namespace}/{install.release} (chart {install.chart.describe()},"
        f" automated sync with selfHeal and prune): Synced, Healthy, desired state holds"
        f" after {time.monotonic() - started:.1f}s"
    )
    kinds = sorted({item.kind for item in desired.items})
    console.print(f"  {len(desired.items)} objects: {', '.join(kinds)}")
    console.print(f"  target:    {path}")
    console.print(f"  on:        {cluster.describe()}")


def undeploy_target_argocd_command(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    timeout: float,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare undeploy argocd --target FILE`: delete the target's Application (Argo CD deletes
    what it deployed first)."""
    _, install, namespace = _argocd_arm(path, ctx, namespace)
    cluster = target_from(ctx, kubeconfig, context)
    started = time.monotonic()
    with console.status(f"removing Application {install.release} ..."):
        removed = undeploy_argocd(cluster, namespace, release=install.release, timeout=timeout)
    if removed:
        console.print(
            f"Application {namespace}/{install.release} removed: it and every object it"
            f" deployed gone after {time.monotonic() - started:.1f}s"
        )
    else:
        console.print(
            f"no Application {install.release!r} in namespace {namespace!r}: nothing to remove"
        )
