"""`compare deploy argocd` and `compare undeploy argocd`: the built-in WebApp through the
approach's interface (`compare.cli.deploy_any_cmd`), or, with `--target FILE`, a target file's
chart as an Application (`compare.cli.target_argocd_cmd`)."""

from __future__ import annotations

from typing import Annotated

import typer

from compare.approaches import get
from compare.cli.common import AppOpt, ContextOpt, KubeconfigOpt, finite
from compare.cli.deploy_any_cmd import NamespaceOpt, deploy_builtin, undeploy_builtin
from compare.cli.deploy_cmd import deploy_app, undeploy_app
from compare.cli.target_argocd_cmd import (
    deploy_target_argocd_command,
    undeploy_target_argocd_command,
)
from compare.cli.target_cmd import TargetOpt, refuse_with_target
from compare.deploy.argocd import DEFAULT_TIMEOUT_S

TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout", callback=finite(1, 3600), help="Seconds to wait, with --target (1 to 3600)."
    ),
]


@deploy_app.command("argocd")
def deploy_argocd_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
) -> None:
    """Deploy the WebApp (or a target file's chart) as an Argo CD Application and wait for its
    desired state."""
    if target_file is None:
        deploy_builtin(get("argocd"), ctx, app, namespace, kubeconfig, context)
        return
    refuse_with_target({"--app": app is not None})
    deploy_target_argocd_command(
        ctx, target_file, namespace, timeout=timeout, kubeconfig=kubeconfig, context=context
    )


@undeploy_app.command("argocd")
def undeploy_argocd_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
) -> None:
    """Remove what `compare deploy argocd` made (the Application and what it deployed)."""
    if target_file is None:
        undeploy_builtin(get("argocd"), ctx, app, namespace, kubeconfig, context)
        return
    refuse_with_target({"--app": app is not None})
    undeploy_target_argocd_command(
        ctx, target_file, namespace, timeout=timeout, kubeconfig=kubeconfig, context=context
    )
