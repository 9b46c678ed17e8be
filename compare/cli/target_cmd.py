"""`--target FILE`: your own chart or operator instead of the built-in WebApp, for deploy,
undeploy and status.

The Helm and operator arms are here, the Flux arm in `compare.cli.target_flux_cmd`.
Everything a command can check without a cluster - the target file, its namespace, `helm
template` of its chart, the kustomize build of its operator - is checked before the cluster is
touched, and a custom resource of a kind nobody serves before anything is applied, so a bad
target file is one line and nothing is created. Without `--target` no
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
from compare.deploy.baseline import baseline_name
from compare.deploy.helm import DEFAULT_NAMESPACE, get_release
from compare.deploy.live import wait_for_desired_state
from compare.deploy.rollback import Rollback
from compare.deploy.rows import DeployedApp
from compare.deploy.status import target_app, target_operator_app
from compare.deploy.target_helm import (
    install_target,
    release_desired,
    render_target,
    target_namespace,
    uninstall_target,
)
from compare.deploy.target_operator import (
    Install,
    check_resources,
    deploy_resources,
    ensure_namespace,
    install,
    install_documents,
    operator_arm,
    plan_install,
    remaining,
    remove_resources,
    served_now,
    uninstall,
)
from compare.errors import EXIT_USAGE, CompareError
from compare.target import HelmInstall, Operator, Target, load_target

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


def _namespace(target: Target, ctx: typer.Context, namespace: str | None) -> str:
    """`-n` when given, else the target's, else the command's default."""
    given = ctx.get_parameter_source("namespace") not in (None, ParameterSource.DEFAULT)
    chosen = namespace if given else None
    if chosen is None and target.namespace is None:
        chosen = DEFAULT_NAMESPACE
    return target_namespace(target, chosen)


def _helm_arm(
    path: Path, ctx: typer.Context, namespace: str | None
) -> tuple[Target, HelmInstall, str]:
    """The loaded target, its `helm` key and the namespace."""
    target = load_target(path)
    install = target.approach("helm")  # a one-line error when the file has no helm key
    assert isinstance(install, HelmInstall)
    return target, install, _namespace(target, ctx, namespace)


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
) -> list[DeployedApp]:
    """`compare status --target FILE`: a row per arm of the target that is deployed - the
    Helm release judged against its manifest, the custom resource against its baseline."""
    target = load_target(path)
    if target.helm is None and target.operator is None:
        raise CompareError(f"{path}: helm: not given (this target has no helm or operator key)")
    namespace = _namespace(target, ctx, namespace)
    cluster: ClusterTarget = target_from(ctx, kubeconfig, context)
    rows = []
    if target.helm is not None:
        install = target.helm
        console.print(
            f"helm release {install.release} of {path} in namespace {namespace}"
            f" on {cluster.describe()}"
        )
        row = target_app(cluster, target, install, namespace)
        if row is None:
            console.print(f"  helm release {install.release}: not installed")
        else:
            rows.append(row)
    if target.operator is not None:
        first = target.operator.resources[0]
        what = f"{first['kind']} {first['metadata']['name']}"
        console.print(f"operator {what} of {path} in namespace {namespace} on {cluster.describe()}")
        row = target_operator_app(cluster, target, target.operator, namespace)
        if row is None:
            console.print(f"  {what}: not deployed")
        else:
            rows.append(row)
    return rows


def _operator_arm(
    path: Path, ctx: typer.Context, namespace: str | None
) -> tuple[Target, Operator, str]:
    """The loaded target, its `operator` key and the namespace."""
    target = load_target(path)
    return target, operator_arm(target), _namespace(target, ctx, namespace)


def deploy_target_operator(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    timeout: float,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare deploy operator --target FILE`: install the operator (or check it is there),
    apply the custom resources, wait until ready, take and store the baseline. A failed
    deploy removes what it created: the resources, the install's new objects, the namespace."""
    target, operator, namespace = _operator_arm(path, ctx, namespace)
    # Without the cluster: the kustomize build / chart rendering of the install.
    documents = install_documents(target, operator, namespace)
    cluster = target_from(ctx, kubeconfig, context)
    api = cluster.api_client()
    try:
        # Before anything is applied: every resource's kind is served or the install's CRD.
        check_resources(api, target, operator, documents)
        existed = all(served_now(api, body, namespace) for body in operator.resources)
    finally:
        api.close()
    started = time.monotonic()
    plan: list[Install] = []

    def remove() -> None:
        remove_resources(cluster, target, operator, namespace, timeout=timeout)
        for done in plan:
            uninstall(cluster, target, operator, done, created_only=True)

    with (
        Rollback(cluster, namespace, existed=existed, remove=remove, warn=print_warning),
        console.status(f"deploying {target.name} with its operator ...") as spinner,
    ):
        ensure_namespace(cluster, namespace)
        plan.append(plan_install(cluster, target, operator, namespace))
        install(cluster, target, operator, plan[0], timeout=timeout)
        spinner.update(f"deploying {target.name}: waiting until ready, then the baseline")
        remaining_s = max(timeout - (time.monotonic() - started), 1.0)
        desired = deploy_resources(
            cluster, target, operator, namespace, timeout=remaining_s, warn=print_warning
        )
    names = ", ".join(f"{b['kind']} {b['metadata']['name']}" for b in operator.resources)
    how = {
        "alreadyInstalled": "operator already installed (checked)",
        "kustomize": f"operator installed from {operator.install.kustomize}",
        "chart": "operator installed as a Helm release",
    }[operator.install.form]
    ready = f"condition {operator.ready_condition}" if operator.ready_condition else "children"
    console.print(
        f"{names} in namespace {namespace}: ready ({ready}), baseline taken after"
        f" {time.monotonic() - started:.1f}s"
    )
    kinds = sorted({item.kind for item in desired.items})
    console.print(f"  baseline:  {len(desired.items)} owned objects: {', '.join(kinds)}")
    console.print(f"  stored:    Secret {namespace}/{baseline_name(target.name)}")
    console.print(f"  {how}")
    console.print(f"  target:    {path}")
    console.print(f"  on:        {cluster.describe()}")


def undeploy_target_operator(
    ctx: typer.Context,
    path: Path,
    namespace: str | None,
    *,
    timeout: float,
    keep_operator: bool,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare undeploy operator --target FILE`: delete the custom resources (finalizers run)
    and the baseline; then remove the operator's install when no resource of its kinds is
    left in the cluster (never an `alreadyInstalled` one)."""
    target, operator, namespace = _operator_arm(path, ctx, namespace)
    documents = install_documents(target, operator, namespace)
    cluster = target_from(ctx, kubeconfig, context)
    started = time.monotonic()
    names = ", ".join(f"{b['kind']} {b['metadata']['name']}" for b in operator.resources)
    with console.status(f"deleting {names} ..."):
        removed = remove_resources(cluster, target, operator, namespace, timeout=timeout)
    if removed:
        console.print(
            f"{names} deleted from namespace {namespace} after {time.monotonic() - started:.1f}s"
        )
    else:
        console.print(f"{names}: not in namespace {namespace}: nothing deleted")
    if operator.install.form == "alreadyInstalled":
        console.print("operator left as it is (alreadyInstalled: never installed or removed here)")
        return
    if keep_operator:
        return
    left = remaining(cluster, operator)
    if left:
        console.print(f"operator left installed: {left} resource(s) of its kinds remain")
        return
    chart = operator.install.chart
    done = Install(
        operator.install.form,
        (chart.namespace if chart is not None else None) or namespace,
        documents,
    )
    with console.status("removing the operator ..."):
        uninstall(cluster, target, operator, done, created_only=False)
    console.print("operator removed (no resource of its kinds was left)")
