"""The root `compare` app: global options and the command groups.

Each command's module is imported when that command runs (or its own help is asked for), not
when `compare` starts: the run engine, the deploy paths, the kubernetes client, pydantic,
chaostoolkit and pyhelm3 take ~0.5 s to import, which `compare cluster up` would otherwise
pay before kwokctl starts (issue 28). `compare --help` lists the commands from COMMANDS.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from dataclasses import dataclass
from typing import Annotated, Any

import typer
from typer._click import Command, Context, HelpFormatter
from typer.core import TyperCommand

from compare.cli.common import ContextOpt, ErrorBoundaryGroup, GlobalOptions, KubeconfigOpt
from compare.cli.terminal import printable_streams
from compare.errors import CompareError
from compare.paths import cache_dir


@dataclass(frozen=True)
class LazyCommand:
    """A command of the root app, loaded on first use: `module:attribute` is a Typer group,
    a function that returns one (`group=True`), or a command function."""

    target: str
    summary: str  # the first paragraph of the command's help, for `compare --help`
    group: bool = False

    def load(self, name: str) -> Command:
        module, _, attribute = self.target.partition(":")
        found = getattr(importlib.import_module(module), attribute)
        if self.group:
            found = found()
        if isinstance(found, typer.Typer):
            command: Command = typer.main.get_group(found)
        else:
            single = typer.Typer(add_completion=False)
            single.command(name)(found)
            command = typer.main.get_command(single)
        command.name = name
        return command


# In the order `compare --help` lists them. tests/cli checks each summary against the
# command's own help.
COMMANDS: dict[str, LazyCommand] = {
    "cluster": LazyCommand("compare.cli.cluster_cmd:app", "The embedded Kubernetes cluster."),
    "deploy": LazyCommand(
        "compare.cli.deploy_cmd:deploy_group", "Deploy the WebApp through one approach.", True
    ),
    "undeploy": LazyCommand(
        "compare.cli.deploy_cmd:undeploy_group", "Remove what `compare deploy` made.", True
    ),
    "status": LazyCommand(
        "compare.cli.status_cmd:status",
        "List the WebApps deployed through each approach, and whether each one holds.",
    ),
    "run": LazyCommand(
        "compare.cli.run_cmd:run",
        "Deploy, inject every fault, measure healing; write results.json and the journals.",
    ),
    "cleanup": LazyCommand(
        "compare.cli.cleanup_cmd:cleanup",
        "Remove the trial namespaces of runs that were killed (their process is gone).",
    ),
    "report": LazyCommand(
        "compare.cli.report_cmd:report",
        "Report which approach healed which fault, how fast, and on what evidence.",
    ),
    "check": LazyCommand(
        "compare.cli.check_cmd:check",
        "Check a run against a policy; every broken expectation is one line.",
    ),
    "setup": LazyCommand(
        "compare.cli.setup_cmd:setup",
        "Build the embedded control plane and the Flux controllers from the shipped Go modules"
        "\n(minutes the first time, cached in ~/.cache/helm-vs-operator), then report what is"
        " there.",
    ),
    "doctor": LazyCommand(
        "compare.cli.setup_cmd:doctor",
        "Report what the toolkit needs and finds: Go, the binaries and their versions, the"
        "\ncluster, chromium. Exit 1 when a binary is missing or not the pinned version.",
    ),
}


class RootGroup(ErrorBoundaryGroup):
    """The root group: its commands are listed from COMMANDS and loaded when one is used."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._listing = False
        for name, lazy in COMMANDS.items():
            self.commands.setdefault(name, TyperCommand(name=name, help=lazy.summary))

    def get_command(self, ctx: Context, cmd_name: str) -> Command | None:
        lazy = COMMANDS.get(cmd_name)
        command = self.commands.get(cmd_name)
        if lazy is not None and not self._listing and type(command) is TyperCommand:
            command = self.commands[cmd_name] = lazy.load(cmd_name)
        return command

    def format_help(self, ctx: Context, formatter: HelpFormatter) -> None:
        # The listing needs each command's name and summary only: no module is imported.
        self._listing = True
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    cls=RootGroup,
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    help="Measure whether a Helm release or an operator heals a WebApp, fault by fault.",
)


def _version(value: bool) -> None:
    if value:
        from compare.cli.setup_cmd import version_text

        typer.echo(version_text())
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
    printable_streams()
    # kubectl and helm (client-go) keep a discovery cache per API server, by default in
    # ~/.kube/cache: one directory per embedded cluster's port, left behind. The toolkit's
    # cache holds it instead, unless the user chose a place.
    # No home: a command that needs the cache says so; report and check do not need it.
    with contextlib.suppress(CompareError):
        os.environ.setdefault("KUBECACHEDIR", str(cache_dir() / "kube-cache"))
    app()
