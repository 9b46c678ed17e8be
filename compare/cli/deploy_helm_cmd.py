"""`compare deploy helm` and `compare undeploy helm`: the WebApp as a release of charts/webapp."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated, Any

import typer
import yaml

from compare.cli.common import AppOpt, ContextOpt, KubeconfigOpt, console, target_from
from compare.cli.deploy_cmd import deploy_app, undeploy_app
from compare.deploy.helm import (
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT_S,
    chart_values,
    check_namespace_name,
    check_release_name,
    deploy_helm,
    get_release,
    undeploy_helm,
)
from compare.errors import CompareError
from compare.webapp import load_webapp

NamespaceOpt = Annotated[str, typer.Option("--namespace", "-n", help="Namespace of the release.")]
ReleaseOpt = Annotated[
    str | None,
    typer.Option("--release", help="Helm release name (default: the WebApp's metadata.name)."),
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=1, help="Seconds to wait for the desired state.")
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


def _load_values(path: Path | None) -> dict[str, Any] | None:
    if path is None:
        return None
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise CompareError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f" at line {mark.line + 1}" if mark is not None else ""
        raise CompareError(f"{path}: not valid YAML{line}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CompareError(f"{path}: expected a mapping of chart values, got {type(data).__name__}")
    return data


@deploy_app.command("helm")
def deploy_helm_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    release: ReleaseOpt = None,
    values: ValuesOpt = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Install or upgrade the WebApp as a Helm release and wait until its pods are Ready."""
    # Every input is checked before the cluster is touched: a bad file changes nothing.
    webapp = load_webapp(app)
    extra = _load_values(values)
    try:
        chart_values(webapp, extra)
    except CompareError as exc:
        raise CompareError(f"{values}: {exc.message.removeprefix('values: ')}") from exc
    release = release or webapp.name
    check_release_name(release)
    check_namespace_name(namespace)
    target = target_from(ctx, kubeconfig, context)
    started = time.monotonic()
    with console.status(f"deploying {webapp.name} with Helm ...") as spinner:

        def progress(text: str) -> None:
            spinner.update(f"deploying {webapp.name} with Helm: {text}")

        deployed = deploy_helm(
            target,
            webapp,
            namespace,
            release=release,
            timeout=timeout,
            extra_values=extra,
            on_progress=progress,
        )
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
    console.print(f"  on:        {target.describe()}")


@undeploy_app.command("helm")
def undeploy_helm_command(
    ctx: typer.Context,
    app: AppOpt = None,
    namespace: NamespaceOpt = DEFAULT_NAMESPACE,
    release: Annotated[
        str | None,
        typer.Option("--release", help="Helm release name (default: metadata.name of --app)."),
    ] = None,
    timeout: TimeoutOpt = DEFAULT_TIMEOUT_S,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Uninstall the Helm release and wait until its objects and pods are gone."""
    release = release or load_webapp(app).name
    check_release_name(release)
    check_namespace_name(namespace)
    target = target_from(ctx, kubeconfig, context)
    if get_release(target, namespace, release) is None:
        console.print(f"no helm release {release!r} in namespace {namespace!r}: nothing to remove")
        return
    started = time.monotonic()
    with console.status(f"uninstalling {release} ...") as spinner:
        undeploy_helm(
            target,
            namespace,
            release=release,
            timeout=timeout,
            on_progress=lambda text: spinner.update(f"uninstalling {release}: {text}"),
        )
    console.print(
        f"helm release {release} removed from namespace {namespace}: every object and pod gone "
        f"after {time.monotonic() - started:.1f}s"
    )
