"""`--target FILE`: your own chart instead of the built-in WebApp, for deploy, undeploy, status.

The Helm arm is here, the Flux arm in `compare.cli.target_flux_cmd`; `deploy operator
--target` is a one-line error so far. Everything a command can check without a cluster - the
target file, its namespace, `helm template` of its chart - is checked before the cluster is
touched, so a bad target file is one line and nothing is created. Without `--target` no
command comes here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from typer._click.core import ParameterSource

from compare.cli.common import console, print_warning, target_from
from compare.cluster import ClusterTarget
from compare.deploy.helm import DEFAULT_NAMESPACE, get_release
from compare.deploy.live import wait_for_desired_state
from compare.deploy.rollback import Rollback
from compare.deploy.status import DeployedApp, target_app
from compare.deploy.target_helm import (
    install_target,
    release_desired,
    render_target,
    target_namespace,
    uninstall_target,
)
from compare.errors import EXIT_USAGE, CompareError
from compare.target import HelmInstall, Target, load_target

TargetOpt = Annotated[
    Path | None,
    typer.Option(
        "--target",
        help="A target file (examples/target-*.yaml): your own chart, not the built-in WebApp.",
        dir_okay=False,
        show_default=False,
    ),
]


def refuse_with_target(given: dict[str, bool]) -> None:
    """`--target` names the chart, release and values itself: a flag that names them too is
    a usage error (`given`: each such flag, and whether it was passed)."""
    for flag, passed in given.items():
        if passed:
            raise CompareError(
                f"--target and {flag} are mutually exclusive (the target file names its chart,"
                " release and values)",
                exit_code=EXIT_USAGE,
            )


def unsupported_arm(path: Path, arm: str) -> CompareError:
    """The error of an approach whose part of a target file the CLI does not deploy yet."""
    return CompareError(
        f"target {path}: the {arm} arm of --target is not supported yet", exit_code=EXIT_USAGE
    )


def _helm_arm(
    path: Path, ctx: typer.Context, namespace: str | None
) -> tuple[Target, HelmInstall, str]:
    """The loaded target, its `helm` key and the namespace: `-n` when given, else the
    target's, else the command's default."""
    target = load_target(path)
    install = target.approach("helm")  # a one-line error when the file has no helm key
    assert isinstance(install, HelmInstall)
    given = ctx.get_parameter_source("namespace") not in (None, ParameterSource.DEFAULT)
    chosen = namespace if given else None
    if chosen is None and target.namespace is None:
        chosen = DEFAULT_NAMESPACE
    return target, install, target_namespace(target, chosen)


def deploy_target_helm(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    timeout: float,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare deploy helm --target FILE`: render, install, wait until the release's manifest
    holds closed-world; a failed deploy removes the release and namespace it created."""
    target, install, namespace = _helm_arm(path, ctx, namespace)
    # `helm template` before the cluster is touched: a chart that does not render is one line.
    render_target(target, install, namespace)
    cluster = target_from(ctx, kubeconfig, context)
    started = time.monotonic()
    existed = get_release(cluster, namespace, install.release) is not None

    def remove() -> None:
        uninstall_target(cluster, install, namespace, timeout=timeout)

    with (
        Rollback(cluster, namespace, existed=existed, remove=remove, warn=print_warning),
        console.status(f"deploying {install.release} with Helm ...") as spinner,
    ):
        deployed = install_target(cluster, target, install, namespace, timeout=timeout)
        spinner.update(f"deploying {install.release} with Helm: waiting for the desired state")
        api = cluster.api_client()
        try:
            desired = release_desired(cluster, api, target, install, namespace)
            remaining = max(timeout - (time.monotonic() - started), 1.0)
            wait_for_desired_state(
                api, namespace, desired, timeout=remaining, what=f"helm release {install.release}"
            )
        finally:
            api.close()
    console.print(
        f"helm release {deployed.release} revision {deployed.revision} "
        f"(chart {install.chart.describe()}, version {deployed.chart_version}) in namespace "
        f"{deployed.namespace}: desired state holds after {time.monotonic() - started:.1f}s"
    )
    kinds = sorted({item.kind for item in desired.items})
    console.print(f"  {len(desired.items)} objects: {', '.join(kinds)}")
    console.print(f"  target:    {path}")
    console.print(f"  on:        {cluster.describe()}")


def undeploy_target_helm(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    timeout: float,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare undeploy helm --target FILE`: uninstall the target's release."""
    _, install, namespace = _helm_arm(path, ctx, namespace)
    cluster = target_from(ctx, kubeconfig, context)
    release = install.release
    if get_release(cluster, namespace, release) is None:
        console.print(f"no helm release {release!r} in namespace {namespace!r}: nothing to remove")
        return
    started = time.monotonic()
    with console.status(f"uninstalling {release} ..."):
        uninstall_target(cluster, install, namespace, timeout=timeout)
    console.print(
        f"helm release {release} removed from namespace {namespace} after "
        f"{time.monotonic() - started:.1f}s"
    )


def target_status(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    kubeconfig: Path | None,
    context: str | None,
) -> DeployedApp | None:
    """`compare status --target FILE`: the row of the target's Helm release (None: not
    installed), judged against the release's manifest."""
    target, install, namespace = _helm_arm(path, ctx, namespace)
    cluster: ClusterTarget = target_from(ctx, kubeconfig, context)
    console.print(
        f"helm release {install.release} of {path} in namespace {namespace} on {cluster.describe()}"
    )
    row = target_app(cluster, target, install, namespace)
    if row is None:
        console.print(f"  helm release {install.release}: not installed")
    return row
