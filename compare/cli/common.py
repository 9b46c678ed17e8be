"""What every command shares: global options, the error boundary and the consoles."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
from typer.core import TyperGroup
from typer.exceptions import Abort

from compare.cluster import ClusterTarget, resolve_target
from compare.errors import EXIT_FAILED, EXIT_USAGE, CompareError
from compare.webapp import DEFAULT_APP

console = Console(soft_wrap=True, highlight=False)
err_console = Console(stderr=True, soft_wrap=True, highlight=False)

KubeconfigOpt = Annotated[
    Path | None,
    typer.Option(
        "--kubeconfig",
        help="Use this kubeconfig instead of the embedded cluster.",
        dir_okay=False,
    ),
]
AppOpt = Annotated[
    Path | None,
    typer.Option(
        "--app",
        help=f"WebApp manifest (default {DEFAULT_APP.name} from examples/).",
        dir_okay=False,
    ),
]
ContextOpt = Annotated[
    str | None, typer.Option("--context", help="Context in the kubeconfig to use.")
]


@dataclass
class GlobalOptions:
    kubeconfig: Path | None = None
    context: str | None = None


class ErrorBoundaryGroup(TyperGroup):
    """Turns CompareError (from any nested command) into one line on stderr and its exit code,
    and usage errors (a wrong flag or value) into one line too, instead of click's usage box."""

    def main(  # type: ignore[override]
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        try:
            result = super().main(
                args=args,
                prog_name=prog_name,
                complete_var=complete_var,
                standalone_mode=False,
                **extra,
            )
            code = result if isinstance(result, int) else 0
        except NoArgsIsHelpError as exc:
            exc.show()
            code = EXIT_USAGE
        except UsageError as exc:
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            err_console.print(f"[bold red]error:[/] {exc.format_message()}{where}", markup=True)
            code = exc.exit_code
        except ClickException as exc:
            err_console.print(f"[bold red]error:[/] {exc.format_message()}", markup=True)
            code = exc.exit_code
        except Abort:
            err_console.print("aborted")
            code = EXIT_FAILED
        if standalone_mode:
            sys.exit(code)
        return code

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except CompareError as exc:
            err_console.print(f"[bold red]error:[/] {exc.message}", highlight=False, soft_wrap=True)
            raise typer.Exit(exc.exit_code) from None
        except KeyboardInterrupt:
            err_console.print("interrupted")
            raise typer.Exit(130) from None


def target_from(
    ctx: typer.Context,
    kubeconfig: Path | None = None,
    context: str | None = None,
    *,
    start_embedded: bool = True,
) -> ClusterTarget:
    """Command-level --kubeconfig/--context win over the root-level ones."""
    root = ctx.find_root().obj
    glob = root if isinstance(root, GlobalOptions) else GlobalOptions()
    return resolve_target(
        kubeconfig or glob.kubeconfig,
        context or glob.context,
        start_embedded=start_embedded,
    )
