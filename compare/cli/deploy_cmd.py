"""`compare deploy NAME` and `compare undeploy NAME`: one command each for every registered
approach, made from its interface alone (`compare.approaches.base`, `commands`).

Each command takes the options every approach's takes - `--app` (the built-in WebApp) or
`--target FILE` (a target file's arm), `-n`, `--timeout` (the approach's default),
`--kubeconfig`, `--context` - and the approach's own (its `commands`, a
`compare.approaches.commands.Commands`: `deploy_options`, `undeploy_options`, their flags built
into the command's signature for Typer). Everything that can be checked without a cluster is
checked first, then the arm goes through `compare.cli.target_cmd` (`deploy_arm`,
`undeploy_arm`), the built-in WebApp's like any target's; the commands say what they start
first (`command_install`) and do after an undeploy (`after_undeploy`).
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer
from typer._click.core import ParameterSource

from compare.approaches import Approach, CommandOption
from compare.cli.common import (
    AppOpt,
    ContextOpt,
    ErrorBoundaryGroup,
    KubeconfigOpt,
    cluster_from,
    finite,
    keyword,
    not_empty,
    option_annotation,
    refuse_system_namespace,
    resolve_namespace,
    say,
    spinner,
)
from compare.cli.target_cmd import (
    TargetOpt,
    deploy_arm,
    load_arm,
    refuse_with_target,
    undeploy_arm,
)
from compare.cluster import ClusterTarget
from compare.deploy.charts import DEFAULT_NAMESPACE
from compare.kube import check_namespace_name
from compare.target import Target
from compare.webapp import load_webapp

deploy_app = typer.Typer(
    cls=ErrorBoundaryGroup, no_args_is_help=True, help="Deploy the WebApp through one approach."
)
undeploy_app = typer.Typer(
    cls=ErrorBoundaryGroup, no_args_is_help=True, help="Remove what `compare deploy` made."
)

NamespaceOpt = Annotated[
    str | None,
    typer.Option(
        "--namespace",
        "-n",
        callback=not_empty,
        help=f"Namespace (default: the file's metadata.namespace, else {DEFAULT_NAMESPACE}).",
        show_default=False,
    ),
]


def deploy_group() -> typer.Typer:
    """`compare deploy`, with every approach's subcommand (made here, when it is used)."""
    _with_approaches()
    return deploy_app


def undeploy_group() -> typer.Typer:
    """`compare undeploy`, with every approach's subcommand."""
    _with_approaches()
    return undeploy_app


def _with_approaches() -> None:
    """`deploy NAME` and `undeploy NAME` for each registered approach, in registry order (an
    approach registered since the last use gets its commands; an unregistered one loses them)."""
    from compare import approaches

    known = approaches.names()
    for group in (deploy_app, undeploy_app):
        group.registered_commands = [c for c in group.registered_commands if c.name in known]
    attached = {info.name for info in deploy_app.registered_commands}
    for approach in approaches.REGISTRY:
        if approach.name not in attached:
            attach(approach, deploy_app, undeploy_app)


def attach(approach: Approach, deploy_group: typer.Typer, undeploy_group: typer.Typer) -> None:
    """Add `deploy NAME` and `undeploy NAME` for `approach` to these command groups."""
    commands = approach.commands
    deploy = _command(
        approach, commands.deploy_options, commands.deploy_timeout, _deploy, "for the desired state"
    )
    deploy.__doc__ = commands.deploy_help or (
        f"Deploy the WebApp (or a --target file's arm) through {approach.name} and wait for"
        " its desired state."
    )
    undeploy = _command(
        approach,
        commands.undeploy_options,
        commands.undeploy_timeout,
        _undeploy,
        "until it is gone",
    )
    undeploy.__doc__ = (
        commands.undeploy_help or f"Remove what `compare deploy {approach.name}` made."
    )
    deploy_group.command(approach.name)(deploy)
    undeploy_group.command(approach.name)(undeploy)


@dataclass(frozen=True)
class Request:
    """What a command acts on, every input checked, and how it reaches the cluster (only
    then)."""

    approach: Approach
    target: Target
    namespace: str
    options: Mapping[str, Any]
    timeout: float
    # The built-in WebApp's target (`--app`), not a target file's (`--target`).
    builtin: bool
    connect: Callable[[], ClusterTarget]


def _deploy(request: Request) -> None:
    """The arm deployed and waited for until its desired state holds."""
    approach, target = request.approach, request.target
    approach.check_target(target, request.namespace)
    cluster = request.connect()
    started = time.monotonic()
    with spinner(f"preparing {approach.name} ..."):
        said = approach.commands.command_install(approach, cluster, target, request.options)
    for line in said:
        say(line)
    deploy_arm(
        approach, cluster, target, request.namespace, timeout=request.timeout, started=started
    )
    say(f"  from:      {target.source}")
    say(f"  on:        {cluster.describe()}")


def _undeploy(request: Request) -> None:
    """What the arm deployed removed and waited for until it is gone; then what the approach
    does after (`after_undeploy`)."""
    approach, target, namespace = request.approach, request.target, request.namespace
    cluster = request.connect()
    undeploy_arm(approach, cluster, target, namespace, request.timeout)
    after = approach.commands.after_undeploy(
        cluster, target, namespace, request.options, builtin=request.builtin
    )
    for line in after:
        say(line)


def _what(
    approach: Approach,
    ctx: typer.Context,
    own: tuple[CommandOption, ...],
    options: Mapping[str, Any],
    app: Path | None,
    namespace: str | None,
    target_file: Path | None,
) -> tuple[Target, str]:
    """The target a command acts on and its namespace: the target file's arm (`--target`),
    else the built-in target of the WebApp in `--app` (or the one an option names)."""
    if target_file is not None:
        refuse_with_target(
            {
                "--app": app is not None,
                **{
                    o.flags[0]: ctx.get_parameter_source(o.name)
                    not in (None, ParameterSource.DEFAULT)
                    for o in own
                    if not o.with_target
                },
            }
        )
        return load_arm(approach, ctx, target_file, namespace)
    named = any(options[o.name] is not None for o in own if o.names_app)
    webapp = None if named else load_webapp(app)
    if webapp is not None:
        namespace = resolve_namespace(namespace, webapp, app, DEFAULT_NAMESPACE)
    namespace = DEFAULT_NAMESPACE if namespace is None else namespace
    check_namespace_name(namespace)
    refuse_system_namespace(namespace)
    return approach.commands.command_target(approach, webapp, app, options), namespace


# -- the commands' signatures -------------------------------------------------------------


def _command(
    approach: Approach,
    own: tuple[CommandOption, ...],
    timeout: float,
    run: Callable[[Request], None],
    waits_for: str,
) -> Callable[..., None]:
    """A command of the shared options and the approach's own (`own`), for Typer: its
    signature is built (`__signature__`), its call hands the approach's options to `run`."""

    def command(ctx: typer.Context, **given: Any) -> None:
        shared = {name: given.pop(name) for name in SHARED}
        approach.commands.check_options(given)
        configured = approach.configured(**given)
        target_file = shared["target_file"]
        target, namespace = _what(
            configured, ctx, own, given, shared["app"], shared["namespace"], target_file
        )
        run(
            Request(
                configured,
                target,
                namespace,
                given,
                shared["timeout"],
                builtin=target_file is None,
                connect=lambda: cluster_from(ctx, shared["kubeconfig"], shared["context"]),
            )
        )

    timeout_opt = Annotated[
        float,
        typer.Option(
            "--timeout", callback=finite(1, 3600), help=f"Seconds to wait {waits_for} (1 to 3600)."
        ),
    ]
    parameters = [
        keyword("ctx", typer.Context),
        keyword("app", AppOpt, None),
        keyword("namespace", NamespaceOpt, None),
        *(keyword(o.name, option_annotation(o), o.default) for o in own),
        keyword("timeout", timeout_opt, timeout),
        keyword("kubeconfig", KubeconfigOpt, None),
        keyword("context", ContextOpt, None),
        keyword("target_file", TargetOpt, None),
    ]
    command.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return command


# The options every approach's commands take, by parameter name (`ctx` aside).
SHARED = ("app", "namespace", "timeout", "kubeconfig", "context", "target_file")
