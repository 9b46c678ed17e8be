"""`compare deploy operator` and `compare undeploy operator`: the WebApp as a custom resource.

Deploy is kubebuilder's `make install` + `make run` + `kubectl apply` of the CR, then a wait
for its Available condition and the desired state; undeploy deletes the CR (the finalizer's
cleanup runs, the garbage collector takes the children) and stops the local operator.
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from compare.cli.common import AppOpt, ContextOpt, KubeconfigOpt, console, target_from
from compare.cli.deploy_cmd import deploy_app, undeploy_app
from compare.deploy.operator import (
    deploy_operator,
    install_operator,
    operator_status,
    stop_operator,
    undeploy_operator,
)
from compare.webapp import load_webapp

DEFAULT_NAMESPACE = "webapp"

NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the WebApp.")]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=1, help="Seconds to wait for Available / deletion.")
]


@deploy_app.command("operator")
def deploy_operator_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    timeout: TimeoutOpt = 120.0,
    webhook_host: Annotated[
        str | None,
        typer.Option(
            "--webhook-host",
            help="Address the API server can reach this machine at; without it the webhook "
            "is registered on the embedded cluster only.",
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Install the CRD, RBAC and webhook, run the operator, apply the WebApp CR."""
    webapp = load_webapp(app)  # bad input fails before anything touches the cluster
    target = target_from(ctx, kubeconfig, context)
    started = time.monotonic()
    with console.status("installing the operator ..."):
        handle = install_operator(target, webhook_host=webhook_host)
    console.print(f"operator installed on {target.describe()}")
    console.print("  CRD webapps.example.com, RBAC (ServiceAccount webapp-system/webapp-operator)")
    if handle.webhook_url:
        console.print(f"  validating webhook: {handle.webhook_url}")
    else:
        console.print("  validating webhook: not registered (no --webhook-host for this cluster)")
    console.print(f"  {handle.describe()}")
    with console.status(f"applying WebApp {namespace}/{webapp.name} ..."):
        deploy_operator(target, webapp, namespace, timeout=timeout)
    console.print(
        f"WebApp {namespace}/{webapp.name} is Available: {webapp.spec.replicas} replica(s) of "
        f"{webapp.spec.image} ({time.monotonic() - started:.1f}s)"
    )


@undeploy_app.command("operator")
def undeploy_operator_command(
    ctx: typer.Context,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    name: Annotated[
        str | None,
        typer.Option("--name", help="WebApp to delete (default: the name in --app)."),
    ] = None,
    app: AppOpt = None,
    timeout: TimeoutOpt = 60.0,
    keep_operator: Annotated[
        bool, typer.Option("--keep-operator", help="Leave the local operator running.")
    ] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Delete the WebApp CR (its finalizer runs), then stop the local operator."""
    webapp_name = name or load_webapp(app).name
    target = target_from(ctx, kubeconfig, context)
    with console.status(f"deleting WebApp {namespace}/{webapp_name} ..."):
        undeploy_operator(target, namespace, name=webapp_name, timeout=timeout)
    console.print(f"WebApp {namespace}/{webapp_name} deleted (finalizer ran, children collected)")
    if keep_operator:
        return
    status = operator_status(target)
    if status is not None and status.running:
        stop_operator(target)
        console.print(f"operator stopped (pid {status.pid}, log {status.log_path})")
