"""The root `compare` app: global options and the command groups."""

from __future__ import annotations

import importlib
import os
from importlib.util import find_spec
from typing import Annotated

import typer

from compare import approaches
from compare.cli import (
    check_cmd,
    cluster_cmd,
    deploy_any_cmd,
    report_cmd,
    run_cmd,
    setup_cmd,
    status_cmd,
)
from compare.cli.common import ContextOpt, ErrorBoundaryGroup, GlobalOptions, KubeconfigOpt
from compare.cli.deploy_cmd import deploy_app, undeploy_app
from compare.paths import cache_dir

app = typer.Typer(
    cls=ErrorBoundaryGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Measure whether a Helm release or an operator heals a WebApp, fault by fault.",
)
app.add_typer(cluster_cmd.app, name="cluster")
# Each registered approach's command module (`compare.cli.deploy_<name>_cmd`) attaches its
# `deploy NAME` and `undeploy NAME` subcommands to these groups on import, in registry order;
# an approach without one gets the commands its interface alone can carry out.
for _approach in approaches.REGISTRY:
    if find_spec(f"compare.cli.deploy_{_approach.name}_cmd") is None:
        deploy_any_cmd.attach(_approach, deploy_app, undeploy_app)
    else:
        importlib.import_module(f"compare.cli.deploy_{_approach.name}_cmd")
app.add_typer(deploy_app, name="deploy")
app.add_typer(undeploy_app, name="undeploy")
app.command("status")(status_cmd.status)
app.command("run")(run_cmd.run)
app.command("report")(report_cmd.report)
app.command("check")(check_cmd.check)
app.command("setup")(setup_cmd.setup)
app.command("doctor")(setup_cmd.doctor)


def _version(value: bool) -> None:
    if value:
        typer.echo(setup_cmd.version_text())
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            is_eager=True,
            callback=_version,
            help="Print the toolkit's version and the pinned component versions.",
        ),
    ] = False,
) -> None:
    """Without --kubeconfig/--context every command uses the embedded cluster."""
    ctx.obj = GlobalOptions(kubeconfig, context)


def main() -> None:
    # kubectl and helm (client-go) keep a discovery cache per API server, by default in
    # ~/.kube/cache: one directory per embedded cluster's port, left behind. The toolkit's
    # cache holds it instead, unless the user chose a place.
    os.environ.setdefault("KUBECACHEDIR", str(cache_dir() / "kube-cache"))
    app()
