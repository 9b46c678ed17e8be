"""A whole `compare run` for a front end: the request checked before the cluster is touched
(`checked_request`), then carried out between its app's preflight and its `finish`
(`prepared`). The CLI parses the flags, renders the progress and prints what it is told;
the decisions are here, so that the command stays a thin layer.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compare import outputfile
from compare.chaos.cluster import recognised
from compare.cluster import ClusterTarget
from compare.errors import EXIT_USAGE, CompareError, first_line
from compare.run.app import TRIAL_NAMESPACE, App
from compare.run.engine import (
    Run,
    RunRequest,
    configured,
    heal_windows,
    plan_trials,
    record_preflight_error,
)
from compare.run.experiments import load_experiments
from compare.run.preflight import (
    chart_sharing,
    code_findings,
    render_findings,
    unserved_left_out,
)


def checked_request(
    app: App,
    approaches: Sequence[str],
    experiments: Sequence[str],
    *,
    output_dir: Path,
    settings: Mapping[str, Mapping[str, Any]],
    **options: Any,
) -> RunRequest:
    """The run the user asked for, every part of it checked without a cluster: the app for
    these approaches, the experiments (names or files; none: the catalogue), each approach
    with trials against its own trials' window, and the output directory."""
    specs = load_experiments(experiments)
    app.check(approaches)  # its charts rendered (helm): after the files' own checks
    request = RunRequest(
        approaches=tuple(approaches),
        experiments=tuple(specs),
        app=app,
        output_dir=output_dir,
        settings=settings,
        **options,
    )
    windows = heal_windows(request)
    for name in dict.fromkeys(plan.approach for plan in plan_trials(request)):
        # Only the approaches with trials: an experiment of yours for helm and operator alone,
        # or a short window with `-a helm -a operator`, has nothing to do with Flux's interval.
        # Each is checked against its own trials' window (with its cadence, unless exact).
        configured(request)[name].check_settings(windows[name].heal_window_seconds)
    try:
        outputfile.check_directory(output_dir)  # made once the cluster answers
    except CompareError as exc:
        raise CompareError(f"--output {exc.message}") from None
    return request


@dataclass(frozen=True)
class Prepared:
    """A run ready to execute, and why its trials run one at a time on each cluster (empty:
    they do not)."""

    run: Run
    one_at_a_time: list[str]


@contextmanager
def prepared(
    cluster: ClusterTarget,
    request: RunRequest,
    *,
    say: Callable[[str], None],
    doing: Callable[[str], AbstractContextManager[Any]],
    warn: Callable[[str], None],
) -> Iterator[Prepared]:
    """The run directory's parent made, the app's preflight carried out (each step under
    `doing`, what it found to `say`), the engine built; on the way out, whatever happened,
    what the preflight installed (a target's operator, its charts' CRDs) removed again, each
    failure one `warn` line."""
    try:
        request.output_dir.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CompareError(
            f"--output {request.output_dir}: cannot create ({exc.strerror or exc})"
        ) from None
    # A chart arm whose controller renders the chart anew, for a chart that renders a new
    # value each time, can hold no desired state: a finding in seconds (two renders, nothing
    # installed), that arm left out, the run going on with the others.
    renders = render_findings(request.app.target, request.approaches, TRIAL_NAMESPACE, doing=doing)
    for line in renders.notes:
        say(line)
    # Likewise, and said first (it is about the whole cluster), an arm that would install an
    # APIService no pod of the embedded cluster serves.
    embedded = recognised(cluster).embedded
    left_out = (
        unserved_left_out(request.app.target, request.approaches, TRIAL_NAMESPACE)
        if embedded
        else {}
    )
    left_out.update((k, v) for k, v in renders.left_out.items() if k not in left_out)
    for name, line in left_out.items():
        say(f"preflight of the {name} arm: {line} (left out of this run)")
    if left_out:
        kept = tuple(a for a in request.approaches if a not in left_out)
        if not kept:
            error = "; ".join(
                f"preflight of the {name} arm: {line}" for name, line in left_out.items()
            )
            _stopped(cluster, request, error, say=say, warn=warn)
            raise CompareError(error, exit_code=EXIT_USAGE)
        request = replace(request, approaches=kept, left_out=left_out)
    # What only a cluster whose pods run code can serve (a webhook of the chart's own pods):
    # said before anything is installed, one line each.
    if embedded:
        for line in code_findings(request.app.target, request.approaches, TRIAL_NAMESPACE):
            warn(line)
    # Two releases of a chart that would compete for something of the node or the cluster:
    # its trials run one at a time per cluster (never an `error` the toolkit caused), on
    # sibling clusters side by side (`compare.run.spread`).
    shared = chart_sharing(request.app.target, request.approaches)
    if shared:
        request = replace(request, parallel=1, cannot_share=True)
    try:
        try:
            steps = request.app.preflight(
                cluster, configured(request), timeout=request.deploy_timeout, warn=warn
            )
            for step in steps:
                with doing(step.doing):
                    found = step.run()
                say(found)
        except CompareError as exc:
            _stopped(cluster, request, exc.message, say=say, warn=warn)
            raise
        yield Prepared(Run(cluster, request), shared)
    finally:
        for line in request.app.finish(cluster, keep=request.keep):
            warn(f"warning: could not remove {line}")


def _stopped(
    cluster: ClusterTarget,
    request: RunRequest,
    error: str,
    *,
    say: Callable[[str], None],
    warn: Callable[[str], None],
) -> None:
    """A run that stops in its preflight still leaves its results.json, saying so (no trial)."""
    try:
        path = record_preflight_error(cluster, request, error)
    except Exception as unsaved:  # the cluster may be why the preflight stopped
        warn(f"warning: results.json not written: {first_line(unsaved)}")
    else:
        say(f"results: {path} (the run stopped in its preflight)")
