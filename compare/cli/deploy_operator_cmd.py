"""`compare deploy operator` and `compare undeploy operator`: the WebApp as a custom resource.

Deploy is kubebuilder's `make install` + `make run` + `kubectl apply` of the CR, then a wait
for its Available condition and the desired state (an operator already leading the cluster is
used, not duplicated); undeploy deletes the CR (the finalizer's cleanup runs, the garbage
collector takes the children) and stops the local operator once no WebApp is left in the
cluster, or when asked to (`--stop-operator`): while WebApps remain, they need it — for their
reconciles, their finalizers, and the webhook (failurePolicy Fail) that admits their writes.
The WebApp is deployed and removed as the built-in target's operator arm, the way `--target`
deploys and removes any other (`compare.cli.target_cmd`).
"""

from __future__ import annotations

import time
from typing import Annotated

import typer

from compare.approaches import get
from compare.approaches.operator import builtin
from compare.cli.common import (
    AppOpt,
    ContextOpt,
    KubeconfigOpt,
    check_host,
    cluster_from,
    console,
    finite,
    not_empty,
    refuse_system_namespace,
    resolve_namespace,
)
from compare.cli.deploy_cmd import deploy_app, undeploy_app
from compare.cli.target_cmd import (
    TargetOpt,
    deploy_arm,
    deploy_target_arm,
    refuse_with_target,
    undeploy_arm,
    undeploy_target_arm,
)
from compare.cluster import ClusterTarget
from compare.deploy.operator import (
    install_operator,
    stop_operator,
)
from compare.deploy.operator_arm import (
    Install,
    install_documents,
    operator_arm,
    remaining,
    uninstall,
)
from compare.errors import EXIT_USAGE, CompareError
from compare.kube import check_namespace_name
from compare.target import Target
from compare.target.builtin import webapp_named
from compare.webapp import load_webapp

DEFAULT_NAMESPACE = "webapp"

NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        callback=not_empty,
        help="Namespace of the WebApp (default: the file's metadata.namespace, else "
        f"{DEFAULT_NAMESPACE}).",
        show_default=False,
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        callback=finite(1, 3600),
        help="Seconds to wait for Available / deletion (1 to 3600).",
    ),
]


@deploy_app.command("operator")
def deploy_operator_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = None,
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
    target_file: TargetOpt = None,
) -> None:
    """Install the CRD, RBAC and webhook, run the operator, apply the WebApp CR."""
    if target_file is not None:
        refuse_with_target({"--app": app is not None, "--webhook-host": webhook_host is not None})
        deploy_target_arm(
            get("operator"),
            ctx,
            target_file,
            namespace,
            timeout=timeout,
            kubeconfig=kubeconfig,
            context=context,
        )
        return
    # Pre-flight: every input is checked before the cluster is touched (nothing is installed
    # for a bad file, namespace or flag).
    webapp = load_webapp(app)
    namespace = resolve_namespace(namespace, webapp, app, DEFAULT_NAMESPACE)
    check_namespace_name(namespace)
    refuse_system_namespace(namespace)
    check_host(webhook_host)
    cluster = cluster_from(ctx, kubeconfig, context)
    started = time.monotonic()
    with console.status("installing the operator ..."):
        handle = install_operator(cluster, webhook_host=webhook_host)
    if handle.found:
        console.print(f"operator found on {cluster.describe()}: nothing installed")
        console.print(f"  {handle.describe()}")
    else:
        _print_installed(cluster.describe(), handle.webhook_url, handle.describe())
    # The built-in target's operator arm, as `--target` deploys any other.
    target = builtin(webapp)
    deploy_arm(get("operator"), cluster, target, namespace, timeout=timeout, started=started)


def _print_installed(where: str, webhook_url: str | None, process: str) -> None:
    console.print(f"operator installed on {where}")
    console.print("  CRD webapps.example.com, RBAC (ServiceAccount webapp-system/webapp-operator)")
    if webhook_url:
        console.print(f"  validating webhook: {webhook_url}")
    else:
        console.print("  validating webhook: not registered (no --webhook-host for this cluster)")
    console.print(f"  {process}")


@undeploy_app.command("operator")
def undeploy_operator_command(
    ctx: typer.Context,
    namespace: NamespaceOpt = None,
    name: Annotated[
        str | None,
        typer.Option(
            "--name", callback=not_empty, help="WebApp to delete (default: the name in --app)."
        ),
    ] = None,
    app: AppOpt = None,
    timeout: TimeoutOpt = 60.0,
    stop: Annotated[
        bool,
        typer.Option(
            "--stop-operator",
            help="Stop the local operator even though WebApps remain in the cluster (they are "
            "then neither reconciled nor admitted: the webhook rejects their writes).",
        ),
    ] = False,
    keep_operator: Annotated[
        bool,
        typer.Option(
            "--keep-operator", help="Leave the operator running even when no WebApp is left."
        ),
    ] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
) -> None:
    """Delete the WebApp CR (its finalizer runs); stop the local operator when no WebApp is
    left in the cluster, or with --stop-operator."""
    if stop and keep_operator:
        raise CompareError(
            "--stop-operator and --keep-operator contradict each other", exit_code=EXIT_USAGE
        )
    if target_file is not None:
        refuse_with_target(
            {"--app": app is not None, "--name": name is not None, "--stop-operator": stop}
        )
        loaded, where = undeploy_target_arm(
            get("operator"),
            ctx,
            target_file,
            namespace,
            timeout=timeout,
            kubeconfig=kubeconfig,
            context=context,
        )
        if not keep_operator:
            _remove_target_install(cluster_from(ctx, kubeconfig, context), loaded, where)
        return
    if name is None:
        webapp = load_webapp(app)
        webapp_name = webapp.name
        namespace = resolve_namespace(namespace, webapp, app, DEFAULT_NAMESPACE)
    else:
        webapp_name = name
    namespace = DEFAULT_NAMESPACE if namespace is None else namespace
    check_namespace_name(namespace)
    refuse_system_namespace(namespace)
    cluster = cluster_from(ctx, kubeconfig, context)
    # The built-in target's operator arm naming that WebApp: all its removal needs.
    undeploy_arm(get("operator"), cluster, builtin(webapp_named(webapp_name)), namespace, timeout)
    if keep_operator:
        return
    left = remaining(cluster, webapp_named(webapp_name))
    if left and not stop:
        console.print(
            f"operator left running: {left} WebApp(s) remain in the cluster "
            "(--stop-operator stops it anyway)"
        )
        return
    stopped = stop_operator(cluster)
    if stopped is not None:
        console.print(f"operator stopped (pid {stopped.pid}, log {stopped.log_path})")
        if left:
            console.print(
                f"warning: {left} WebApp(s) remain without an operator; the webhook "
                "rejects their writes until `compare deploy operator` runs again"
            )
    elif stop:
        console.print("no local operator serves this cluster: nothing stopped")


def _remove_target_install(cluster: ClusterTarget, target: Target, namespace: str) -> None:
    """After a target's custom resources are gone: remove the operator's install when no
    resource of its kinds is left in the cluster (never an `alreadyInstalled` one, nor the
    toolkit's own, which every WebApp shares)."""
    operator = operator_arm(target)
    if operator.install.form in ("alreadyInstalled", "toolkit"):
        how = {
            "alreadyInstalled": "alreadyInstalled: never installed or removed here",
            "toolkit": "the toolkit's own: shared, never removed here",
        }[operator.install.form]
        console.print(f"operator left as it is ({how})")
        return
    left = remaining(cluster, operator)
    if left:
        console.print(f"operator left installed: {left} resource(s) of its kinds remain")
        return
    chart = operator.install.chart
    documents = install_documents(target, operator, namespace)
    done = Install(
        operator.install.form,
        (chart.namespace if chart is not None else None) or namespace,
        documents,
    )
    with console.status("removing the operator ..."):
        uninstall(cluster, target, operator, done, created_only=False)
    console.print("operator removed (no resource of its kinds was left)")
