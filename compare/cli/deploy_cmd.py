"""`compare deploy ...` and `compare undeploy ...`: one subcommand per approach.

The approach modules (deploy_helm_cmd, deploy_operator_cmd) attach their commands here.
"""

from __future__ import annotations

import importlib
from importlib.util import find_spec

import typer

from compare.cli.common import ErrorBoundaryGroup

deploy_app = typer.Typer(
    cls=ErrorBoundaryGroup, no_args_is_help=True, help="Deploy the WebApp through one approach."
)
undeploy_app = typer.Typer(
    cls=ErrorBoundaryGroup, no_args_is_help=True, help="Remove what `compare deploy` made."
)


def _with_approaches() -> None:
    """Each registered approach's command module (`compare.cli.deploy_<name>_cmd`) attaches its
    `deploy NAME` and `undeploy NAME` subcommands to the two groups on import, in registry
    order; an approach without one gets the commands its interface alone can carry out."""
    from compare import approaches
    from compare.cli import deploy_any_cmd

    attached = {info.name for info in deploy_app.registered_commands}
    for approach in approaches.REGISTRY:
        if approach.name in attached:
            continue
        if find_spec(f"compare.cli.deploy_{approach.name}_cmd") is None:
            deploy_any_cmd.attach(approach, deploy_app, undeploy_app)
        else:
            importlib.import_module(f"compare.cli.deploy_{approach.name}_cmd")


def deploy_group() -> typer.Typer:
    """`compare deploy`, with every approach's subcommand (imported here, when it is used)."""
    _with_approaches()
    return deploy_app


def undeploy_group() -> typer.Typer:
    """`compare undeploy`, with every approach's subcommand."""
    _with_approaches()
    return undeploy_app
