"""`compare status`: every WebApp deployed through a registered approach (or a target file's
arms), and whether it holds: each row the approach's `target_row`, with or without `--target`."""

from __future__ import annotations

from typing import Annotated

import typer
from kubernetes.client import ApiException
from rich.console import Console
from rich.table import Table
from rich.text import Text

from compare.approaches import REGISTRY, deployed_apps, load_target
from compare.cli.common import ContextOpt, KubeconfigOpt, cluster_from, console, not_empty, say
from compare.cli.target_cmd import TargetOpt, target_namespace_of
from compare.cluster import ClusterTarget
from compare.deploy.charts import DEFAULT_NAMESPACE
from compare.deploy.rows import DeployedApp
from compare.errors import EXIT_USAGE, CompareError
from compare.inert import terminal, visible
from compare.kube import check_namespace_name


def _count(value: int | None) -> str:
    return "-" if value is None else str(value)


def _table(apps: list[DeployedApp]) -> Table:
    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in ("APPROACH", "NAME", "NAMESPACE", "READY", "IMAGE", "STATUS", "STATE"):
        table.add_column(column, no_wrap=column != "STATE")
    for app in apps:
        style = "green" if app.state == "holds" else "yellow"
        # A cell is rich markup: what the cluster says (names, images, conditions) made
        # inert, so `containers[app].image` prints as it is.
        table.add_row(
            terminal(app.approach),
            terminal(app.name),
            terminal(app.namespace),
            terminal(f"{_count(app.ready_replicas)}/{_count(app.desired_replicas)}"),
            terminal(app.image or "-"),
            terminal(app.detail),
            Text(visible(app.state), style=style),
        )
    return table


def status(
    ctx: typer.Context,
    namespace: Annotated[
        str, typer.Option("--namespace", "-n", callback=not_empty, help="Namespace to look in.")
    ] = DEFAULT_NAMESPACE,
    all_namespaces: Annotated[
        bool, typer.Option("--all-namespaces", "-A", help="Look in every namespace.")
    ] = False,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    target_file: TargetOpt = None,
) -> None:
    """List the WebApps deployed through each approach, and whether each one holds.

    Helm releases, Flux HelmReleases and Argo CD Applications of charts/webapp, and WebApp CRs.

    READY is ready/desired pods of the live Deployment and IMAGE its first container's image,
    as they are now (a drifted value shows as it is); STATUS is the release's revision and
    status, the HelmRelease's Ready condition and last drift, the Application's sync and
    health, or the CR's status.phase; STATE compares the live objects with what the approach
    asked for (the release's applied manifest, what the Application applies, or the built-in
    chart's rendering of the CR's spec).

    With --target FILE: the same row for each arm of the target - its Helm release and its
    Flux HelmRelease, judged closed-world on every object of the release's manifest, its Argo
    CD Application on the chart's rendering, and its operator's custom resource on the
    baseline of owned objects its deploy took.
    """
    if target_file is not None:
        if all_namespaces:
            raise CompareError(
                "--target and --all-namespaces are mutually exclusive (a target's release is"
                " in one namespace)",
                exit_code=EXIT_USAGE,
            )
        loaded = load_target(target_file)
        where = target_namespace_of(loaded, ctx, namespace)
        cluster = cluster_from(ctx, kubeconfig, context)
        rows = []
        # A row per arm the file has, in the registry's order.
        for approach in REGISTRY:
            if approach.arm(loaded) is None:
                continue
            what = approach.target_what(loaded)
            say(f"{what} of {target_file} in namespace {where} on {cluster.describe()}")
            row = approach.target_row(cluster, loaded, where)
            if row is None:
                say(f"  {what}: not deployed")
            else:
                rows.append(row)
        if rows:
            _print_table(rows)
        return
    if not all_namespaces:
        check_namespace_name(namespace)
    cluster = cluster_from(ctx, kubeconfig, context)
    where = "all namespaces" if all_namespaces else f"namespace {namespace}"
    apps = deployed_apps(cluster, None if all_namespaces else namespace)
    say(f"WebApps in {where} on {cluster.describe()}")
    for approach in REGISTRY:
        if not any(app.approach == approach.name for app in apps):
            say(f"  {approach.label}: none")
    if apps:
        _print_table(apps)
    if all_namespaces:
        _print_leftovers(cluster)


def _print_leftovers(cluster: ClusterTarget) -> None:
    """The trial namespaces of runs whose process is gone (or cannot be checked), one line
    each with the command that removes them."""
    # Here, not at the top: the run engine's imports are for `status -A` alone.
    from compare.run.owners import ALIVE, DEAD, find_runs

    with cluster.api_client() as api:
        try:
            runs = [r for r in find_runs(api) if r.state != ALIVE]
        except ApiException as exc:
            if exc.status != 403:
                raise
            return  # a user who may not list namespaces: the table is what there is

    for run in runs:
        how = "compare cleanup" if run.state == DEAD else f"compare cleanup --run {run.run_id}"
        what = "killed run" if run.state == DEAD else "run of another host"
        say(f"left by a {what}: {run.describe()} (remove with `{how}`)")


def _print_table(apps: list[DeployedApp]) -> None:
    # Piped output (scripts, CI logs) keeps whole rows instead of cutting them to 80 columns.
    out = console if console.is_terminal else Console(width=400, highlight=False)
    out.print(_table(apps))
