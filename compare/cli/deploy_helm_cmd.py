"""`compare deploy helm` and `compare undeploy helm`: the WebApp as a release of charts/webapp
(or, with `--target FILE`, a target file's chart: `compare.cli.target_cmd`, as for every
approach)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer

from compare.approaches import Approach, get
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
from compare.cli.deploy_cmd import deploy_app, undeploy_app
from compare.cli.target_cmd import (
    TargetOpt,
    deploy_target_arm,
    refuse_with_target,
    undeploy_target_arm,
)
from compare.cluster import ClusterTarget
from compare.deploy.helm import (
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT_S,
    check_release_name,
    get_release,
    undeploy_helm,
    webapp_manifest,
)
from compare.deploy.rollback import Rollback
from compare.errors import CompareError
from compare.inputfile import load_yaml
from compare.kube import check_namespace_name
from compare.target import Target, builtin_target
from compare.webapp import WebApp, chart_values, load_webapp

# Chart values are a few KiB; a bigger file is a mistake (a wrong path), not values.
MAX_VALUES_BYTES = 1024 * 1024

NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        callback=not_empty,
        help="Namespace of the release (default: the file's metadata.namespace, else "
        f"{DEFAULT_NAMESPACE}).",
        show_default=False,
    ),
]
ReleaseOpt = Annotated[
    str | None,
    typer.Option(
        "--release",
        callback=not_empty,
        help="Helm release name (default: the WebApp's metadata.name).",
    ),
]
TimeoutOpt = Annotated[
    float,
    typer.Option(
        "--timeout",
        callback=finite(1, 3600),
        help="Seconds to wait for the desired state (1 to 3600).",
    ),
]
ValuesOpt = Annotated[
    Path | None,
    typer.Option(
        "--values",
        "-f",
        help="Extra chart values (YAML): probes, security contexts, ... not the WebApp's own.",
        dir_okay=False,
    ),
]


def load_values(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    data = load_yaml(path, limit=MAX_VALUES_BYTES)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CompareError(f"{path}: expected a mapping of chart values, got {type(data).__name__}")
    return data


def chart_inputs(
    app: Path | None, namespace: str | None, release: str | None, values: Path | None
) -> tuple[WebApp, dict[str, Any] | None, str, str]:
    """The inputs of a deploy of the chart, every one checked before the cluster is touched (a
    bad file changes nothing): the WebApp, the extra values, the namespace and the release."""
    webapp = load_webapp(app)
    extra = load_values(values)
    namespace = resolve_namespace(namespace, webapp, app, DEFAULT_NAMESPACE)
    release = webapp.name if release is None else release
    check_release_name(release)
    check_namespace_name(namespace)
    refuse_system_namespace(namespace)
    try:
        chart_values(webapp, extra)
        # `helm template` (no cluster): the chart's schema and templates accept these values.
        webapp_manifest(webapp, release=release, extra_values=extra)
    except CompareError as exc:
        if values is None or not exc.message.startswith("values: "):
            raise
        raise CompareError(f"{values}: {exc.message.removeprefix('values: ')}") from exc
    return webapp, extra, namespace, release


def release_to_remove(
    app: Path | None, namespace: str | None, release: str | None
) -> tuple[str, str]:
    """The release and namespace an undeploy names: `--release`, else the WebApp's name (and
    its namespace) from `--app`."""
    if release is None:
        webapp = load_webapp(app)
        release = webapp.name
        namespace = resolve_namespace(namespace, webapp, app, DEFAULT_NAMESPACE)
    namespace = DEFAULT_NAMESPACE if namespace is None else namespace
    check_release_name(release)
    check_namespace_name(namespace)
    refuse_system_namespace(namespace)
    return release, namespace


def deploy_with_rollback(
    approach: Approach,
    cluster: ClusterTarget,
    target: Target,
    namespace: str,
    *,
    timeout: float,
    existed: bool,
) -> None:
    """The built-in target's arm deployed; a failed deploy removes what it created (the arm
    when it was not there before, the namespace when this created it)."""
    with (
        Rollback(
            cluster,
            namespace,
            existed=existed,
            remove=lambda: approach.undeploy_target(cluster, target, namespace, timeout=timeout),
            warn=print_warning,
        ),
        console.status(f"deploying {target.name} with {approach.name} ..."),
    ):
        approach.deploy_target(cluster, target, namespace, timeout=timeout)


@deploy_app.command("helm")
def deploy_helm_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = None,
    release: ReleaseOpt = None,
    values: ValuesOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
) -> None:
    """Install or upgrade the WebApp (or a --target file's chart) as a Helm release and wait
    until its desired state holds."""
    if target_file is not None:
        refuse_with_target(
            {
                "--app": app is not None,
                "--release": release is not None,
                "--values": values is not None,
            }
        )
        deploy_target_arm(
            get("helm"),
            ctx,
            target_file,
            namespace,
            timeout=timeout,
            kubeconfig=kubeconfig,
            context=context,
        )
        return
    webapp, extra, namespace, release = chart_inputs(app, namespace, release, values)
    # The built-in WebApp is deployed as the target it is, through the approach's target path.
    helm = get("helm")
    target = builtin_target(webapp, app, release=release, extra_values=extra)
    cluster = cluster_from(ctx, kubeconfig, context)
    started = time.monotonic()
    existed = get_release(cluster, namespace, release) is not None
    deploy_with_rollback(helm, cluster, target, namespace, timeout=timeout, existed=existed)
    deployed = get_release(cluster, namespace, release)
    if deployed is None:
        raise CompareError(f"helm release {namespace}/{release}: gone right after its deploy")
    spec = webapp.spec
    console.print(
        f"helm release {deployed.release} revision {deployed.revision} "
        f"(chart webapp-{deployed.chart_version}) in namespace {deployed.namespace}: "
        f"desired state holds after {time.monotonic() - started:.1f}s"
    )
    console.print(
        f"  Deployment {webapp.name}: {spec.replicas}/{spec.replicas} ready, {spec.image}"
    )
    console.print(f"  Service    {webapp.name}: ClusterIP, port {spec.port} -> http")
    if spec.env:
        console.print("  env:       " + ", ".join(f"{v.name}={v.value}" for v in spec.env))
    console.print(f"  on:        {cluster.describe()}")


@undeploy_app.command("helm")
def undeploy_helm_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = None,
    release: Annotated[
        str | None,
        typer.Option(
            "--release",
            callback=not_empty,
            help="Helm release name (default: metadata.name of --app).",
        ),
    ] = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
) -> None:
    """Uninstall the Helm release (or a --target file's) and wait until its objects and pods
    are gone."""
    if target_file is not None:
        refuse_with_target({"--app": app is not None, "--release": release is not None})
        undeploy_target_arm(
            get("helm"),
            ctx,
            target_file,
            namespace,
            timeout=timeout,
            kubeconfig=kubeconfig,
            context=context,
        )
        return
    release, namespace = release_to_remove(app, namespace, release)
    cluster = cluster_from(ctx, kubeconfig, context)
    if get_release(cluster, namespace, release) is None:
        console.print(f"no helm release {release!r} in namespace {namespace!r}: nothing to remove")
        return
    started = time.monotonic()
    with console.status(f"uninstalling {release} ...") as spinner:
        undeploy_helm(
            cluster,
            namespace,
            release=release,
            timeout=timeout,
            on_progress=lambda text: spinner.update(f"uninstalling {release}: {text}"),
        )
    console.print(
        f"helm release {release} removed from namespace {namespace}: every object and pod gone "
        f"after {time.monotonic() - started:.1f}s"
    )
