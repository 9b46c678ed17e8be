"""A target's arm deployed and removed, for `compare deploy NAME` and `compare undeploy NAME`
of every approach (`compare.cli.deploy_cmd`), through its interface alone: a target file's
(`--target FILE`: your own chart or operator) and the built-in WebApp's alike.

Everything that can be checked without a cluster - the target file, its namespace, the arm
(`Approach.check_target`: `helm template` of a chart, the kustomize build of an operator's
install) - is checked before the cluster is touched; what the arm needs installed first (an
operator) is installed by `Approach.install_target`, and a failed deploy removes what it
created: the arm, the install's new objects, the namespace. The approach gives the facts of
what it deployed (`TargetDeploy`: what it was made from, the states it reached) and how `compare
status` names it (`target_what`); the lines that say so are made here.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from typer._click.core import ParameterSource

from compare.approaches import Approach, arms, load_target
from compare.cli.common import print_warning, say, spinner
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import target_namespace
from compare.deploy.charts import DEFAULT_NAMESPACE
from compare.errors import EXIT_USAGE, CompareError
from compare.inert import terminal
from compare.target import Target

TargetOpt = Annotated[
    Path | None,
    typer.Option(
        "--target",
        help="A target file (examples/target-*.yaml): your own chart, not the built-in WebApp.",
        dir_okay=False,
        show_default=False,
    ),
]


def refuse_with_target(given: dict[str, bool]) -> None:
    """`--target` names the chart, release and values itself: a flag that names them too is
    a usage error (`given`: each such flag, and whether it was passed)."""
    for flag, passed in given.items():
        if passed:
            raise CompareError(
                f"--target and {flag} are mutually exclusive (the target file names its chart,"
                " release and values)",
                exit_code=EXIT_USAGE,
            )


def target_namespace_of(target: Target, ctx: typer.Context, namespace: str | None) -> str:
    """`-n` when given, else the target's, else the command's default."""
    given = ctx.get_parameter_source("namespace") not in (None, ParameterSource.DEFAULT)
    chosen = namespace if given else None
    if chosen is None and target.namespace is None:
        chosen = DEFAULT_NAMESPACE
    return target_namespace(target, chosen)


def load_arm(
    approach: Approach, ctx: typer.Context, path: Path, namespace: str | None
) -> tuple[Target, str]:
    """The target file, checked to have the approach's arm, and the namespace it goes to."""
    target = load_target(path)
    target.arm(approach.name)  # one line naming the key when the file has none
    return target, target_namespace_of(target, ctx, namespace)


def deploy_arm(
    approach: Approach,
    cluster: ClusterTarget,
    target: Target,
    namespace: str,
    *,
    timeout: float,
    started: float,
) -> None:
    """A target's arm (checked without a cluster) deployed by the one path every caller takes
    (`compare.approaches.arms.deploy_arm`: what it needs installed first, then the arm, waited
    for until its desired state holds, `timeout` counted from `started`; a failure removes
    what it created); what it deployed said."""
    remaining = max(timeout - (time.monotonic() - started), 1.0)
    with spinner(f"deploying {target.name} with {approach.name} ...") as shown:
        # What the deploy reports as it waits (the cluster's conditions) is markup to the
        # spinner: made inert first.
        done = arms.deploy_arm(
            approach, cluster, target, namespace, timeout=remaining,
            progress=lambda text: shown.update(terminal(text)), warn=print_warning,
        )  # fmt: skip
    deployed = done.deployed
    for line in deployed.warnings:
        print_warning(line)
    # The approach says what it deployed as facts; the lines are made here.
    facts = ", ".join(f"{name} {value}" for name, value in deployed.facts)
    states = ", ".join((*deployed.reached, "desired state holds"))
    say(
        f"{approach.target_what(target)}{f' ({facts})' if facts else ''} in namespace"
        f" {namespace}: {states} after {time.monotonic() - started:.1f}s"
    )
    items = deployed.desired.items
    kinds = ", ".join(sorted({item.kind for item in items}))
    notes = [*_webapp_notes(target)] if approach.charted else []
    owned = "owned " if deployed.owned else ""
    notes.append(f"{'baseline:  ' if owned else ''}{len(items)} {owned}objects: {kinds}")
    notes += [f"{name + ':':<10} {value}" for name, value in deployed.details]
    for note in notes:
        say(f"  {note}")


def _webapp_notes(target: Target) -> list[str]:
    """What the built-in target's WebApp runs (nothing for a target file's chart)."""
    lines: list[str] = []
    for webapp in target.webapps if target.own_chart else ():
        name, spec = webapp.name, webapp.spec
        lines.append(f"Deployment {name}: {spec.replicas}/{spec.replicas} ready, {spec.image}")
        lines.append(f"Service    {name}: ClusterIP, port {spec.port} -> http")
        if spec.env:
            lines.append("env:       " + ", ".join(f"{v.name}={v.value}" for v in spec.env))
    return lines


def undeploy_arm(
    approach: Approach, cluster: ClusterTarget, target: Target, namespace: str, timeout: float
) -> None:
    """What a target's arm deployed removed and waited for until it is gone; said."""
    what = approach.target_what(target)
    started = time.monotonic()
    with spinner(f"removing {what} ..."):
        removed = approach.undeploy_target(cluster, target, namespace, timeout=timeout)
    if removed:
        say(f"{what} removed from namespace {namespace} after {time.monotonic() - started:.1f}s")
    else:
        say(f"no {what} in namespace {namespace}: nothing to remove")
