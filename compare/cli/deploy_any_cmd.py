"""`compare deploy NAME` and `compare undeploy NAME` for a registered approach without a
command module of its own (`compare.cli.deploy_<name>_cmd`): the built-in WebApp, or a target
file's arm (`--target`), deployed through the approach's interface alone (`Approach.prepare`,
`deploy`, `undeploy`; `deploy_target`, `undeploy_target`), with the options every approach
shares. A command module of an approach reuses `deploy_builtin` and `undeploy_builtin` for the
built-in WebApp and `compare.cli.target_cmd` for a target, and adds what is its own."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Annotated

import typer

from compare.approaches import Approach
from compare.cli.common import (
    AppOpt,
    ContextOpt,
    KubeconfigOpt,
    cluster_from,
    console,
    finite,
    not_empty,
    print_warning,
    refuse_system_namespace,
    resolve_namespace,
)
from compare.cli.target_cmd import (
    TargetOpt,
    deploy_target_arm,
    refuse_with_target,
    undeploy_target_arm,
)
from compare.deploy.helm import DEFAULT_NAMESPACE, DEFAULT_TIMEOUT_S
from compare.deploy.operator_arm import ensure_namespace
from compare.deploy.rollback import Rollback
from compare.kube import check_namespace_name
from compare.webapp import load_webapp

TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout", callback=finite(1, 3600), help="Seconds to wait, with --target (1 to 3600)."
    ),
]
NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        callback=not_empty,
        help=f"Namespace (default: the file's metadata.namespace, else {DEFAULT_NAMESPACE}).",
        show_default=False,
    ),
]


def deploy_builtin(
    approach: Approach,
    ctx: typer.Context,
    app: Path | None,
    namespace: str | None,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare deploy NAME` of the built-in WebApp, through the approach's interface."""
    webapp = load_webapp(app)
    namespace = resolve_namespace(namespace, webapp, app, DEFAULT_NAMESPACE)
    check_namespace_name(namespace)
    refuse_system_namespace(namespace)
    cluster = cluster_from(ctx, kubeconfig, context)
    started = time.monotonic()
    # A failed deploy removes only what it created: an app that was there stays.
    api = cluster.api_client()
    try:
        rows = approach.status(cluster, api, namespace)
    finally:
        api.close()
    existed = any(r.name == webapp.name and r.namespace == namespace for r in rows)
    with (
        Rollback(
            cluster,
            namespace,
            existed=existed,
            remove=lambda: approach.undeploy(cluster, webapp, namespace),
            warn=print_warning,
        ),
        console.status(f"deploying {webapp.name} with {approach.name} ..."),
    ):
        approach.prepare(cluster)
        ensure_namespace(cluster, namespace)
        approach.deploy(cluster, webapp, namespace)
    console.print(
        f"{approach.name}: {webapp.name} in namespace {namespace}: desired state holds"
        f" after {time.monotonic() - started:.1f}s"
    )


def undeploy_builtin(
    approach: Approach,
    ctx: typer.Context,
    app: Path | None,
    namespace: str | None,
    kubeconfig: Path | None,
    context: str | None,
) -> None:
    """`compare undeploy NAME` of the built-in WebApp, through the approach's interface."""
    webapp = load_webapp(app)
    namespace = resolve_namespace(namespace, webapp, app, DEFAULT_NAMESPACE)
    check_namespace_name(namespace)
    refuse_system_namespace(namespace)
    cluster = cluster_from(ctx, kubeconfig, context)
    with console.status(f"removing {webapp.name} ({approach.name}) ..."):
        approach.undeploy(cluster, webapp, namespace)
    console.print(f"{approach.name}: {webapp.name} removed from namespace {namespace}")


def attach(approach: Approach, deploy_group: typer.Typer, undeploy_group: typer.Typer) -> None:
    """Add `deploy NAME` and `undeploy NAME` for `approach` to these command groups: the
    built-in WebApp (`--app`) or a target file's arm (`--target`, `compare.cli.target_cmd`)."""
    deploy = _command(approach, deploy_builtin, deploy_target_arm)
    deploy.__doc__ = (
        f"Deploy the WebApp (or a --target file's arm) through {approach.name} and wait for"
        " its desired state."
    )
    undeploy = _command(approach, undeploy_builtin, undeploy_target_arm)
    undeploy.__doc__ = f"Remove what `compare deploy {approach.name}` made."
    deploy_group.command(approach.name)(deploy)
    undeploy_group.command(approach.name)(undeploy)


def _command(
    approach: Approach, builtin: Callable[..., None], arm: Callable[..., object]
) -> Callable[..., None]:
    """One command over the options every approach shares: `builtin` for the WebApp, `arm`
    with `--target`."""

    def command(
        ctx: typer.Context,
        app: AppOpt = None,
        namespace: NamespaceOpt = None,
        kubeconfig: KubeconfigOpt = None,
        context: ContextOpt = None,
        target_file: TargetOpt = None,
        timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    ) -> None:
        if target_file is None:
            builtin(approach, ctx, app, namespace, kubeconfig, context)
            return
        refuse_with_target({"--app": app is not None})
        arm(
            approach,
            ctx,
            target_file,
            namespace,
            timeout=timeout,
            kubeconfig=kubeconfig,
            context=context,
        )

    return command
