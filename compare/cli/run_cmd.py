"""`compare run`: every experiment against every approach, with progress and a summary table."""

from __future__ import annotations

import inspect
import threading
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)

from compare import approaches as registry
from compare.approaches import Approach, CommandOption, builtin_target, load_target
from compare.cli.common import (
    ContextOpt,
    KubeconfigOpt,
    cluster_from,
    console,
    finite,
    keyword,
    option_annotation,
    print_warning,
    say,
    sigterm_as_interrupt,
    spinner,
)
from compare.cli.target_cmd import TargetOpt, refuse_with_target
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.errors import EXIT_FAILED
from compare.inert import terminal
from compare.paths import REPORTS_DIR
from compare.report.data import ReportData
from compare.report.text import render_table
from compare.results import RESULTS_FILE, RunResults, TrialResult, summarize
from compare.results.model import MAX_HEAL_WINDOW_S, MAX_PARALLEL, MAX_SETTLE_S, MAX_TRIALS
from compare.results.writers import written_by
from compare.run import (
    DEFAULT_HEAL_WINDOW_S,
    DEFAULT_PARALLEL,
    DEFAULT_RECHECK_S,
    DEFAULT_SETTLE_S,
    RunInterrupted,
    TrialPlan,
)
from compare.run.app import App
from compare.run.engine import Run
from compare.run.launch import checked_request, prepared
from compare.run.owners import clean_dead_runs
from compare.run.spread import MAX_CLUSTERS
from compare.webapp import DEFAULT_APP, load_webapp

EXIT_INTERRUPTED = 130


# The approaches of a run without --approach: every registered one that is part of a default
# run, in registry order.
DEFAULT_APPROACHES = registry.default_names()


def _approach_name(value: str) -> str:
    """`--approach`'s value: a registered approach's name, read when the command runs (an
    approach registered after this module's import is one too)."""
    known = registry.names()
    if value not in known:
        raise typer.BadParameter(f"{value!r} is not one of {', '.join(map(repr, known))}.")
    return value


def run(
    ctx: typer.Context,
    approach: Annotated[
        list[str] | None,
        typer.Option(
            "--approach",
            "-a",
            parser=_approach_name,
            metavar="NAME",
            help=f"Approach to test: {', '.join(registry.names())} (repeatable; default "
            f"{', '.join(DEFAULT_APPROACHES[:-1])} and {DEFAULT_APPROACHES[-1]}).",
        ),
    ] = None,
    experiment: Annotated[
        list[str] | None,
        typer.Option(
            "--experiment",
            "-e",
            help="Built-in experiment name or a path to your own experiment file"
            " (repeatable; default the whole catalogue).",
        ),
    ] = None,
    trials: Annotated[
        int,
        typer.Option(
            "--trials", "-n", min=1, max=MAX_TRIALS, help="Trials per experiment and approach."
        ),
    ] = 1,
    heal_window: Annotated[
        float,
        typer.Option(
            "--heal-window",
            callback=finite(0.1, MAX_HEAL_WINDOW_S),
            help="Seconds each trial waits, from the injection, for the desired state"
            f" (0.1 to {MAX_HEAL_WINDOW_S:g}), plus the approach's own cadence (flux: its"
            " interval + 5 %; argocd: its self-heal backoff), unless --exact-heal-window.",
        ),
    ] = DEFAULT_HEAL_WINDOW_S,
    exact_heal_window: Annotated[
        bool,
        typer.Option(
            "--exact-heal-window",
            help="Give every approach exactly --heal-window, without its cadence (then"
            " --flux-interval must be shorter than it).",
        ),
    ] = False,
    parallel: Annotated[
        int, typer.Option("--parallel", "-p", min=1, max=MAX_PARALLEL, help="Trials run at once.")
    ] = DEFAULT_PARALLEL,
    settle: Annotated[
        float,
        typer.Option(
            "--settle",
            callback=finite(0.0, MAX_SETTLE_S),
            help="Seconds the desired state must hold, without a drifting event, before a"
            " heal counts (a relapse inside it is a flap).",
        ),
    ] = DEFAULT_SETTLE_S,
    recheck: Annotated[
        float,
        typer.Option(
            "--recheck",
            callback=finite(0.1, 60.0),
            help="Seconds between full re-reads that cross-check the watch (and the cluster).",
        ),
    ] = DEFAULT_RECHECK_S,
    app: Annotated[
        Path | None,
        typer.Option(
            "--app", help=f"WebApp manifest (default examples/{DEFAULT_APP.name}).", dir_okay=False
        ),
    ] = None,
    output: Annotated[
        Path,
        typer.Option("--output", "-o", help="Directory of the run directories.", file_okay=False),
    ] = REPORTS_DIR,
    keep: Annotated[
        bool, typer.Option("--keep", help="Keep each trial's namespace (and what is in it).")
    ] = False,
    target_file: TargetOpt = None,
    deploy_timeout: Annotated[
        float,
        typer.Option(
            "--deploy-timeout",
            callback=finite(1.0, MAX_HEAL_WINDOW_S),
            help="Seconds a deploy may take to be ready (each trial's, and a --target's"
            " preflight); past it the trial (the run) is an error.",
        ),
    ] = DEPLOY_TIMEOUT_S,
    shared_cluster: Annotated[
        bool,
        typer.Option(
            "--shared-cluster",
            help="Run the cluster-wide faults (control-plane restarts) on the run's own"
            " embedded cluster, alone, as every other trial waits; by default they run on a"
            " sibling embedded cluster made for the run and deleted after it.",
        ),
    ] = False,
    clusters: Annotated[
        int | None,
        typer.Option(
            "--clusters",
            min=1,
            max=MAX_CLUSTERS,
            help="When the app's trials cannot share a cluster (fixed-name cluster-wide"
            " objects, host ports), run them one at a time on each of up to N embedded"
            " clusters: the run's and siblings made for the run, deleted after it (default"
            " from the machine's cores and memory; 1: one at a time on the run's cluster).",
        ),
    ] = None,
    kubeconfig: KubeconfigOpt = None,
    context: ContextOpt = None,
    **approach_options: Any,
) -> None:
    """Deploy, inject every fault, measure healing; write results.json and the journals."""
    # Everything the user gave is checked before the cluster is touched: first each
    # approach's own options (`--flux-interval`, ...), as its settings.
    # An approach registered after the command was built has no flags of its own: its
    # settings are its defaults.
    settings = {
        a.name: {
            o.name: approach_options[_parameter(a, o)]
            for o in a.commands.run_options
            if _parameter(a, o) in approach_options
        }
        for a in registry.REGISTRY
        if a.commands.run_options
    }
    for name, values in settings.items():
        registry.get(name).commands.check_options(values)
    if target_file is not None:
        refuse_with_target({"--app": app is not None})
        the_app = App(load_target(target_file))
    else:
        # `--app FILE`: the built-in target with that WebApp.
        app_path = app or DEFAULT_APP
        the_app = App(builtin_target(load_webapp(app_path), app_path))
    approaches = tuple(dict.fromkeys(str(a) for a in approach or the_app.default_approaches()))
    request = checked_request(
        the_app,
        approaches,
        experiment or (),
        output_dir=output,
        settings=settings,
        trials=trials,
        heal_window=heal_window,
        exact_heal_window=exact_heal_window,
        parallel=parallel,
        settle=settle,
        recheck=recheck,
        keep=keep,
        deploy_timeout=deploy_timeout,
        fault_cluster=not shared_cluster,
        clusters=clusters,
    )
    cluster = cluster_from(ctx, kubeconfig, context)
    # What killed runs left is removed first (one line says what; `compare.run.owners`).
    for line in clean_dead_runs(cluster):
        print_warning(line)
    # What the preflight says holds the target's names and the cluster's words: inert.
    with prepared(
        cluster, request, say=say, doing=spinner,
        warn=print_warning,
    ) as ready:  # fmt: skip
        engine = ready.run
        # Without the experiments the app has no object for (listed below).
        plans = engine.plans
        with _ProgressListener(len(plans)) as listener, sigterm_as_interrupt():
            for name, reason in engine.skipped.items():
                listener.note(f"skipped {name}: {reason}")
            for spec in engine.request.experiments:
                # Run for some approaches only: the others, by reason.
                by_reason: dict[str, list[str]] = {}
                for approach_name, reason in spec.skipped_for.items():
                    by_reason.setdefault(reason, []).append(approach_name)
                for reason, names in by_reason.items():
                    listener.note(f"skipped {spec.name} for {', '.join(names)}: {reason}")
            if ready.one_at_a_time:
                listener.note(_one_at_a_time(engine, ready.one_at_a_time, clusters))
            listener.note(
                f"run {engine.run_id}: {len(plans)} trials, {engine.request.parallel} at a time"
                + (
                    f" on each of up to {1 + len(engine.trial_clusters)} clusters"
                    if engine.trial_clusters
                    else ""
                )
            )
            try:
                results = engine.execute(listener)
            except RunInterrupted as stop:
                listener.stop()
                _summary(stop.results, stop.run_dir)
                print_warning(
                    f"interrupted: {len(stop.results.trials)} finished trials saved in"
                    f" {stop.run_dir / RESULTS_FILE} (complete: false); namespaces removed"
                )
                raise typer.Exit(EXIT_INTERRUPTED) from None
        _summary(results, engine.run_dir)
        if ready.one_at_a_time or (results.clusters_used or 1) > 1:
            say(f"trials ran on {results.clusters_used} cluster(s)")
        for line in engine.cleanup_errors:
            print_warning(f"warning: could not remove namespace {line}")
        say(f"results: {engine.run_dir / RESULTS_FILE}")
        say(f"journals: {engine.run_dir / 'journals'}/")
        if any(t.status == "error" for t in results.trials):
            # The measurements stand; errors are listed in the summary above.
            raise typer.Exit(EXIT_FAILED)


def _one_at_a_time(engine: Run, reasons: list[str], clusters: int | None) -> str:
    """Why the trials run one at a time, and on how many clusters."""
    why = "; ".join(reasons)
    siblings = [s.name for s in engine.trial_clusters]
    if siblings:
        return (
            f"trials run one at a time on each cluster, side by side on the run's and"
            f" {len(siblings)} sibling(s) made for them ({', '.join(siblings)}): {why}"
        )
    if clusters is not None and clusters > 1 and not engine.cluster.embedded:
        why += " (--clusters makes siblings of the embedded cluster only)"
    return f"trials run one at a time: {why}"


def _parameter(approach: Approach, option: CommandOption) -> str:
    """The parameter an approach's run option is passed as (`flux_interval`)."""
    return f"{approach.name}_{option.name}"


# Typer reads the command's parameters from its signature: the approaches' run options are
# keyword parameters of their own, before `--target` (the `**approach_options` they arrive in).
_signature = inspect.signature(run, eval_str=True)
_fixed = [
    p.replace(kind=p.KEYWORD_ONLY)
    for p in _signature.parameters.values()
    if p.kind is not p.VAR_KEYWORD
]
_at = [p.name for p in _fixed].index("target_file")
run.__signature__ = _signature.replace(  # type: ignore[attr-defined]
    parameters=[
        *_fixed[:_at],
        *(
            keyword(_parameter(a, o), option_annotation(o), o.default)
            for a in registry.REGISTRY
            for o in a.commands.run_options
        ),
        *_fixed[_at:],
    ]
)


def _summary(results: RunResults, run_dir: Path) -> None:
    data = ReportData(summarize(results), source=run_dir / RESULTS_FILE)
    console.print(render_table(data), end="", markup=False)


class _ProgressListener:
    """Rich progress: one bar for the run, one line per trial under way."""

    def __init__(self, total: int) -> None:
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.fields[count]}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
            # A calm display: re-rendering a line per trial under way costs CPU the trials need.
            refresh_per_second=2,
        )
        self.total = total
        self.done = 0
        self.overall = self.progress.add_task("trials", total=total, count=f"0/{total}")
        self.lines: dict[str, TaskID] = {}
        self.lock = threading.Lock()

    def __enter__(self) -> _ProgressListener:
        self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self.progress.stop()

    def note(self, text: str) -> None:
        say(text)

    def phase(self, plan: TrialPlan, phase: str) -> None:
        with self.lock:
            task = self.lines.get(plan.slug)
            # A progress line is rich markup: a label's `[...]` kept, its controls shown.
            text = terminal(f"  {plan.label}: {phase}")
            if task is None:
                self.lines[plan.slug] = self.progress.add_task(text, total=None, count="")
            else:
                self.progress.update(task, description=text)

    def finished(self, plan: TrialPlan, result: TrialResult) -> None:
        with self.lock:
            task = self.lines.pop(plan.slug, None)
            if task is not None:
                self.progress.remove_task(task)
            self.done += 1
            self.progress.update(self.overall, advance=1, count=f"{self.done}/{self.total}")
        took = (
            f" in {result.time_to_heal_seconds:.2f} s"
            if result.time_to_heal_seconds is not None
            else ""
        )
        if result.evidence.healed_by:
            took += f" {written_by(result.evidence.healed_by)}"
        detail = f": {result.error}" if result.error else took
        say(f"{plan.label}: {result.status}{detail}")
