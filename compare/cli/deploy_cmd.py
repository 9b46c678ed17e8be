"""`compare deploy ...` and `compare undeploy ...`: one subcommand per approach.

The approach modules (deploy_helm_cmd, deploy_operator_cmd) attach their commands here.
"""

from __future__ import annotations

import typer

from compare.cli.common import ErrorBoundaryGroup

deploy_app = typer.Typer(
    cls=ErrorBoundaryGroup, no_args_is_help=True, help="Deploy the WebApp through one approach."
)
undeploy_app = typer.Typer(
    cls=ErrorBoundaryGroup, no_args_is_help=True, help="Remove what `compare deploy` made."
)
