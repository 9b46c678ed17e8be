"""`compare cluster up|down|status|kubeconfig`: the embedded control plane."""

from __future__ import annotations

from typing import Annotated

import typer

from compare.cli.common import (
    ContextOpt,
    ErrorBoundaryGroup,
    KubeconfigOpt,
    cluster_from,
    not_empty,
    say,
    spinner,
)
from compare.cli.setup_cmd import build_with_progress
from compare.cluster.embedded import (
    ARGS_ENV,
    DEFAULT_NODES,
    MAX_NODES,
    NODE_MAX_PODS,
    SERVICE_CIDR,
    TUNING_ENV,
    TUNINGS,
    EmbeddedCluster,
    parse_control_plane_args,
)
from compare.cluster.toolchain import missing_binaries
from compare.inert import visible
from compare.paths import check_cache_dir

# Imported where used, not here: the kubernetes client and the deploy paths take ~0.5 s to
# import, which `compare cluster up` would add to the cluster's own start (issue 28).

app = typer.Typer(
    cls=ErrorBoundaryGroup, no_args_is_help=True, help="The embedded Kubernetes cluster."
)

NameOpt = Annotated[
    str | None,
    typer.Option(
        "--name",
        callback=not_empty,
        help="Cluster name (env COMPARE_CLUSTER_NAME, default 'compare').",
    ),
]


def _cluster(name: str | None) -> EmbeddedCluster:
    """The named cluster, once the cache directory its state lives in is usable: a cache
    path that is a file would read as "not created" and make every write fail later."""
    check_cache_dir()
    return EmbeddedCluster(name)


@app.command()
def up(
    name: NameOpt = None,
    nodes: Annotated[
        int | None,
        typer.Option(
            min=1,
            max=MAX_NODES,
            help=(
                f"kwok nodes (default {DEFAULT_NODES}), each holding {NODE_MAX_PODS} pods; "
                "for a running cluster, scales its nodes to this."
            ),
        ),
    ] = None,
    port: Annotated[
        int | None, typer.Option(min=1, max=65535, help="kube-apiserver port on 127.0.0.1.")
    ] = None,
    tuning: Annotated[
        str | None,
        typer.Option(
            help=(
                f"Control-plane flags for a new cluster: {' or '.join(TUNINGS)} (kwokctl's own "
                f"defaults); env {TUNING_ENV}, default throughput."
            ),
        ),
    ] = None,
    arg: Annotated[
        list[str] | None,
        typer.Option(
            "--arg",
            metavar="COMPONENT:FLAG=VALUE",
            help=(
                "One control-plane flag for a new cluster, over the tuning's "
                f"(repeatable; env {ARGS_ENV}, space-separated), "
                "e.g. kube-controller-manager:kube-api-qps=300; "
                "COMPONENT:env:NAME=VALUE sets an environment variable, e.g. etcd:env:GOGC=100."
            ),
        ),
    ] = None,
) -> None:
    """Start the embedded cluster (idempotent: reports a running one).

    It is sized for thousands of WebApps: a /16 Service range and high-capacity kwok nodes.
    """
    cluster = _cluster(name)
    if missing_binaries():
        # The first run: the build's own progress, not under the spinner below.
        build_with_progress()
    before = cluster.status()
    if before.running:
        if nodes is not None:
            cluster.up(nodes=nodes)
            say(f"embedded cluster {cluster.name!r} is already running; {nodes} node(s)")
        else:
            say(f"embedded cluster {cluster.name!r} is already running")
        if tuning or arg:
            say(
                "  --tuning/--arg apply when a cluster is created: "
                f"`compare cluster down{cluster.name_flag()}` first to change them"
            )
    else:
        with spinner(f"starting embedded cluster {cluster.name!r} ..."):
            overrides = parse_control_plane_args(arg, source="--arg") if arg else None
            cluster.up(nodes=nodes, port=port, tuning=tuning, extra_args=overrides)
        say(f"embedded cluster {cluster.name!r} is running")
    say(f"  capacity:   Services from {SERVICE_CIDR}, {NODE_MAX_PODS} pods per node")
    say(f"  kubeconfig: {cluster.kubeconfig}")
    say(f"  use it:     kubectl --kubeconfig {cluster.kubeconfig} get nodes")
    say(f"  stop it:    compare cluster down{cluster.name_flag()}")


@app.command()
def down(name: NameOpt = None) -> None:
    """Delete the embedded cluster and stop all of its processes."""
    from compare.approaches import forget_cluster
    from compare.cluster.target import ClusterTarget

    cluster = _cluster(name)
    # The local operator and Flux processes (started by `compare deploy` / `compare run`) belong
    # to the cluster: they go first, so no process outlives the cluster.
    forget_cluster(ClusterTarget(cluster.kubeconfig, None, embedded=True))
    if cluster.down():
        say(f"embedded cluster {cluster.name!r} deleted")
    else:
        say(f"no embedded cluster {cluster.name!r}")


@app.command()
def status(name: NameOpt = None) -> None:
    """Tell whether the embedded cluster exists and which processes run."""
    for line in _cluster(name).status().describe().splitlines():
        say(line)


@app.command()
def kubeconfig(name: NameOpt = None) -> None:
    """Print the embedded cluster's kubeconfig path."""
    typer.echo(visible(str(_cluster(name).kubeconfig)))


@app.command()
def info(ctx: typer.Context, kubeconfig: KubeconfigOpt = None, context: ContextOpt = None) -> None:
    """Show the cluster commands would use (--kubeconfig/--context, else the embedded one)."""
    from kubernetes import client

    cluster = cluster_from(ctx, kubeconfig, context)
    api = cluster.api_client()
    try:
        version = client.VersionApi(api).get_code()
        nodes = client.CoreV1Api(api).list_node().items
    finally:
        api.close()
    say(cluster.describe())
    say(f"  server:  {api.configuration.host}  (Kubernetes {version.git_version})")
    say(f"  nodes:   {len(nodes)}")
