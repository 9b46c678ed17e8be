"""`compare cleanup`: remove the trial namespaces and sibling clusters killed runs left
(`compare.run.owners`)."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from compare.cli.common import ContextOpt, KubeconfigOpt, cluster_from, not_empty, print_warning
from compare.errors import EXIT_FAILED, CompareError
from compare.run.owners import ALIVE, DEAD, find_runs, remove_dead_fault_clusters, remove_runs

# `compare.run.engine.new_run_id`'s shape: checked before the cluster is asked.
# (or a preflight's, `compare.run.owners.preflight_labels`).
RUN_ID = re.compile(r"^([0-9]{8}T[0-9]{6}Z-[0-9a-f]{4}|preflight-[0-9]+)$")


def cleanup(
    ctx: typer.Context,
    run_id: Annotated[
        str | None,
        typer.Option(
            "--run",
            callback=not_empty,
            help="Remove this run's namespaces even when its process cannot be checked (a"
            " run of another host); never those of a run still under way on this host.",
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
) -> None:
    """Remove the trial namespaces of runs that were killed (their process is gone).

    This machine's killed runs' sibling embedded clusters (fault and trial clusters) go too.

    `compare run` does this at its start for this host's runs; `compare status -A` lists what
    is left. A run of another host is removed only when named with --run.
    """
    if run_id is not None and not RUN_ID.match(run_id):
        raise CompareError(
            f"--run {run_id!r}: not a run id (a run directory's name, like 20260101T120000Z-ab12)"
        )
    cluster = cluster_from(ctx, kubeconfig, context)
    # This machine's, whatever the cluster: their owners are recorded here.
    siblings, broken = remove_dead_fault_clusters()
    if siblings:
        print_warning(f"removed the sibling clusters of killed runs: {', '.join(siblings)}")
    for line in broken:
        print_warning(f"could not remove {line}; `compare cluster down --name NAME` deletes one")
    with cluster.api_client() as api:
        runs = find_runs(api)
    if run_id is not None:
        named = [r for r in runs if r.run_id == run_id]
        if not named:
            raise CompareError(f"--run {run_id}: no namespace of that run on {cluster.describe()}")
        if named[0].state == ALIVE:
            raise CompareError(
                f"--run {run_id}: the run is still under way ({named[0].owner}); stop it first"
            )
        chosen = named
    else:
        chosen = [r for r in runs if r.state == DEAD]
    if not chosen:
        print_warning(f"no namespace of a killed run on {cluster.describe()}")
        if broken:
            raise typer.Exit(EXIT_FAILED)
        return
    removed, failed = remove_runs(cluster, chosen)
    if removed:
        plural = "s" if len(removed) > 1 else ""
        print_warning(f"removed {len(removed)} namespace{plural}: {', '.join(removed)}")
    for line in failed:
        print_warning(f"could not remove {line}")
    if failed or broken:
        raise typer.Exit(EXIT_FAILED)
