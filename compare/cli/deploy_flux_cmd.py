"""`compare deploy flux` and `compare undeploy flux`: the WebApp as a Flux HelmRelease of
charts/webapp, reconciled by the real source-controller and helm-controller - the built-in
target's flux arm (`compare.target.builtin_target`) - or, with `--target FILE`, a target file's
chart (`compare.cli.target_cmd`)."""

from __future__ import annotations

import time
from typing import Annotated

import typer

from compare.approaches import get
from compare.cli.common import (
    AppOpt,
    ContextOpt,
    KubeconfigOpt,
    cluster_from,
    console,
    finite,
    not_empty,
)
from compare.cli.deploy_cmd import deploy_app, undeploy_app
from compare.cli.deploy_helm_cmd import (
    ValuesOpt,
    chart_inputs,
    deploy_with_rollback,
    release_to_remove,
)
from compare.cli.target_cmd import (
    TargetOpt,
    deploy_target_arm,
    refuse_with_target,
    undeploy_target_arm,
)
from compare.deploy.flux import (
    DEFAULT_INTERVAL_S,
    DEFAULT_TIMEOUT_S,
    flux_status,
    format_interval,
    read_helm_release,
    remove_flux,
)
from compare.deploy.flux_arm import source_name
from compare.deploy.flux_install import ensure_flux_binaries
from compare.deploy.helm import DEFAULT_NAMESPACE
from compare.target import builtin_target
from compare.target.builtin import BUILTIN_CHART
from compare.webapp import load_webapp

NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        callback=not_empty,
        help="Namespace of the HelmRelease (default: the file's metadata.namespace, else "
        f"{DEFAULT_NAMESPACE}).",
        show_default=False,
    ),
]
ReleaseOpt = Annotated[
    str | None,
    typer.Option(
        "--release",
        callback=not_empty,
        help="HelmRelease and Helm release name (default: metadata.name).",
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option("--timeout", callback=finite(1, 3600), help="Seconds to wait (1 to 3600)."),
]
IntervalOpt = Annotated[
    float,
    typer.Option(
        "--flux-interval",
        callback=finite(0.5, 3600),
        help="The HelmRelease's reconcile interval in seconds: helm-controller checks for "
        "drift and corrects it once per interval.",
    ),
]


@deploy_app.command("flux")
def deploy_flux_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = None,
    release: ReleaseOpt = None,
    values: ValuesOpt = None,
    interval: IntervalOpt = DEFAULT_INTERVAL_S,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
) -> None:
    """Deploy the WebApp as a Flux HelmRelease (drift detection enabled) from a local Helm
    repository, starting source-controller and helm-controller when needed."""
    if target_file is not None:
        refuse_with_target(
            {
                "--app": app is not None,
                "--release": release is not None,
                "--values": values is not None,
            }
        )
        deploy_target_arm(
            get("flux").configured(interval=interval),
            ctx,
            target_file,
            namespace,
            timeout=timeout,
            kubeconfig=kubeconfig,
            context=context,
        )
        return
    webapp, extra, namespace, release = chart_inputs(app, namespace, release, values)
    ensure_flux_binaries()
    # The built-in WebApp is deployed as the target it is, through the approach's target path.
    flux = get("flux").configured(interval=interval)
    target = builtin_target(webapp, app, release=release, extra_values=extra)
    cluster = cluster_from(ctx, kubeconfig, context)
    started = time.monotonic()
    api = cluster.api_client()
    try:
        existed = read_helm_release(api, namespace, release) is not None
    finally:
        api.close()
    deploy_with_rollback(flux, cluster, target, namespace, timeout=timeout, existed=existed)
    handle = flux_status(cluster)
    spec = webapp.spec
    console.print(
        f"HelmRelease {namespace}/{release} (interval {format_interval(interval)}, drift "
        f"detection enabled): Ready, desired state holds after "
        f"{time.monotonic() - started:.1f}s"
    )
    console.print(
        f"  Deployment {webapp.name}: {spec.replicas}/{spec.replicas} ready, {spec.image}"
    )
    assert target.flux is not None
    console.print(f"  chart:     {BUILTIN_CHART} (HelmRepository {source_name(target.flux)})")
    console.print(f"  flux:      {handle.describe()}")
    console.print(f"  on:        {cluster.describe()}")


@undeploy_app.command("flux")
def undeploy_flux_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = None,
    release: ReleaseOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    stop_flux: Annotated[
        bool,
        typer.Option(
            "--stop-flux",
            help="Also stop the Flux controllers and the chart server and delete their "
            "ServiceAccounts and roles (the CRDs stay).",
        ),
    ] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
) -> None:
    """Delete the HelmRelease (helm-controller uninstalls it) and its HelmRepository; wait
    until the release's objects are gone."""
    if target_file is not None:
        refuse_with_target({"--app": app is not None, "--release": release is not None})
        undeploy_target_arm(
            get("flux"),
            ctx,
            target_file,
            namespace,
            timeout=timeout,
            kubeconfig=kubeconfig,
            context=context,
        )
        if stop_flux:
            remove_flux(cluster_from(ctx, kubeconfig, context))
            console.print("Flux controllers and chart server stopped; their identities deleted")
        return
    release, namespace = release_to_remove(app, namespace, release)
    target = builtin_target(load_webapp(app), app, release=release)
    cluster = cluster_from(ctx, kubeconfig, context)
    started = time.monotonic()
    with console.status(f"removing HelmRelease {release} ..."):
        removed = get("flux").undeploy_target(cluster, target, namespace, timeout=timeout)
    if removed:
        console.print(
            f"HelmRelease {namespace}/{release} removed: helm-controller uninstalled the release,"
            f" the HelmRelease and its HelmRepository gone after {time.monotonic() - started:.1f}s"
        )
    else:
        console.print(f"no HelmRelease {release!r} in namespace {namespace!r}: nothing to remove")
    if stop_flux:
        remove_flux(cluster)
        console.print("Flux controllers and chart server stopped; their identities deleted")
