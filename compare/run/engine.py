"""The run: every (experiment, approach, trial) in its own namespace, results saved as they land.

Trials run `parallel` at a time in worker threads. An experiment marked `exclusive` runs alone
among the trials of the approaches it applies to (`scope: approach`, the default: the
operator-down-drift one stops the shared operator): after every other trial of those
approaches, while trials of other approaches (Helm's, which need no operator) go on; the
operator is running again before another operator trial starts. The approaches an exclusive
experiment touches go first, so it does not wait at the end on its own. An exclusive experiment
with `scope: cluster` (it restarts the API server, etcd, the controller manager: every trial
on the cluster would feel it) runs alone in the whole run: its trials go first and no other
trial starts until the last of them is over - unless the run has a fault cluster
(`compare.run.sibling`: on the embedded cluster, by default): then its groups run there, one at
a time, beside the other trials, which go on at `parallel` on the run's cluster (if the fault
cluster cannot be made, the run says so and goes on as above). When its fault can be shared
(`ExperimentSpec.shares_fault`), the same trial of each approach starts together and they go
through one injection (`compare.chaos.shared`); otherwise its trials run one at a time. An
experiment the cluster cannot run (`requires: [embedded-cluster]` on another cluster) is left
out of the run, with its reason (`Run.skipped`). results.json is rewritten atomically after
every trial, so an interruption keeps every finished trial. On Ctrl-C/SIGTERM (a
KeyboardInterrupt in the main thread) the run cancels the trials under way, saves with
`complete: false`, removes the namespaces it made (operator CRs first, operator running) and
raises RunInterrupted.

An app whose trials cannot share a cluster (`cannot_share`, `compare.run.sharing`) runs one
trial at a time on the run's cluster and, on the embedded cluster, one at a time on each of
the siblings made for them (`compare.run.spread`: up to `clusters` in all); whatever happens,
every sibling is stopped and deleted at the end (after a Ctrl-C too), and results.json says
on how many clusters the trials ran (`clustersUsed`) and each moved trial where (`cluster`).
"""

from __future__ import annotations

import io
import logging
import secrets
import threading
import time
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kubernetes import client

from compare import __version__, approaches, outputfile
from compare.approaches import Approach, trial_window
from compare.chaos import control_plane, probes
from compare.chaos.cluster import pointed_at, recognised, trial_secrets
from compare.chaos.shared import SharedFault
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.errors import EXIT_USAGE, CompareError, first_line
from compare.judge import DEFAULT_SETTLE_S
from compare.kube import poll
from compare.results import (
    RESULTS_FILE,
    ApproachWindow,
    ClusterInfo,
    PreflightFinding,
    RunResults,
    RunSettings,
    SkippedExperiment,
    TrialResult,
    save_results_json,
)
from compare.run import sibling, spread
from compare.run.app import App
from compare.run.experiments import ExperimentSpec
from compare.run.sibling import READY_TIMEOUT_S, FaultCluster, SiblingCluster
from compare.run.spread import MAIN
from compare.run.trial import (
    Cancelled,
    Ledger,
    Listener,
    TrialContext,
    TrialPlan,
    remove_namespace,
    run_trial,
)

DEFAULT_HEAL_WINDOW_S = 10.0
# How long the end-of-run cleanup waits for an API server that is not answering.
LEFTOVER_API_WAIT_S = 60.0
LEFTOVER_ATTEMPTS = 3
_API_GONE = f"the API server did not answer within {LEFTOVER_API_WAIT_S:.0f}s"
DEFAULT_RECHECK_S = 2.0
# 20 at a time: with the cluster-wide faults on the fault cluster, the rest of the default run is
# the longer part; on 2 cores shared with other jobs (load 7-9) -p 12/16/20/24 took 138/132/
# 115/111 s, the verdicts of 12, 16 and 20 identical to a -p 12 run without the fault cluster,
# while 24 pushed a Flux heal past its 15.25 s window (README, *The embedded cluster*).
DEFAULT_PARALLEL = 20
# How often the main thread wakes while trials run, so Ctrl-C is handled promptly.
WAIT_TICK_S = 0.2


@dataclass(frozen=True)
class RunRequest:
    approaches: tuple[str, ...]
    experiments: tuple[ExperimentSpec, ...]
    # The app under test: the built-in WebApp or a target file's (`compare.run.app`).
    app: App
    output_dir: Path
    trials: int = 1
    heal_window: float = DEFAULT_HEAL_WINDOW_S
    # `--exact-heal-window`: every approach's trials get `heal_window` as it is, without its
    # cadence (`compare.approaches.trial_window`).
    exact_heal_window: bool = False
    parallel: int = DEFAULT_PARALLEL
    settle: float = DEFAULT_SETTLE_S
    recheck: float = DEFAULT_RECHECK_S
    keep: bool = False
    # Per approach, its settings by name (`Approach.configured`): `{"flux": {"interval": 5}}`
    # from `--flux-interval`; an approach not named keeps its defaults.
    settings: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # How long a deploy into a trial's namespace may take (`--deploy-timeout`).
    deploy_timeout: float = DEPLOY_TIMEOUT_S
    # Cluster-wide faults on a sibling embedded cluster (`--shared-cluster` turns it off).
    fault_cluster: bool = True
    # Arms the preflight left out of the run before anything was installed, each with its
    # one-line finding (`compare.run.preflight.render_findings`); not in `approaches`.
    left_out: Mapping[str, str] = field(default_factory=dict)
    # The app's trials cannot share a cluster (`compare.run.sharing`): one at a time per
    # cluster, spread over siblings on the embedded cluster (`compare.run.spread`).
    cannot_share: bool = False
    # How many clusters those trials may use, the run's included (`--clusters`; None: the
    # machine's default, `compare.run.spread.default_clusters`).
    clusters: int | None = None


class RunInterrupted(Exception):
    """Ctrl-C or SIGTERM: the finished trials were saved, the namespaces removed."""

    def __init__(self, results: RunResults, run_dir: Path) -> None:
        super().__init__(f"run {results.run_id} interrupted")
        self.results = results
        self.run_dir = run_dir


class _Quiet:
    def phase(self, plan: TrialPlan, phase: str) -> None:
        return None

    def finished(self, plan: TrialPlan, result: TrialResult) -> None:
        return None


def configured(request: RunRequest) -> dict[str, Approach]:
    """The request's approaches, in its order, each with its settings."""
    return {
        name: approaches.get(name).configured(**request.settings.get(name, {}))
        for name in request.approaches
    }


def heal_windows(request: RunRequest) -> dict[str, ApproachWindow]:
    """Per approach of the request, the heal window of its trials and what it is made of."""
    windows = {}
    for name, approach in configured(request).items():
        cadence = approach.cadence()
        windows[name] = ApproachWindow(
            heal_window_seconds=trial_window(
                request.heal_window, cadence, exact=request.exact_heal_window
            ),
            cadence_seconds=cadence.seconds if cadence is not None else 0.0,
            cadence=cadence.what if cadence is not None else None,
            cadence_added=cadence is not None and not request.exact_heal_window,
        )
    return windows


def plan_trials(request: RunRequest) -> list[TrialPlan]:
    """Experiments x approaches (where the experiment applies) x trials, in catalogue order."""
    plans = [
        TrialPlan(spec, approach, trial)
        for spec in request.experiments
        for approach in request.approaches
        if approaches.get(approach).applies_to(spec)
        for trial in range(1, request.trials + 1)
    ]
    if not plans:
        names = ", ".join(s.name for s in request.experiments)
        raise CompareError(
            f"nothing to run: {names} apply to none of --approach {', '.join(request.approaches)}",
            exit_code=EXIT_USAGE,
        )
    return plans


def schedule(plans: Sequence[TrialPlan]) -> list[TrialPlan]:
    """The order trials start in: cluster-wide exclusive trials first, then the approaches an
    exclusive experiment touches, then the rest; catalogue order within each."""
    touched = {
        p.approach for p in plans if p.experiment.exclusive and not p.experiment.cluster_wide
    }
    return sorted(
        plans,
        key=lambda p: (
            (0, False, False)
            if p.experiment.cluster_wide
            else (1, p.approach not in touched, p.experiment.exclusive)
        ),
    )


def admissible(
    plan: TrialPlan,
    queue: Sequence[TrialPlan],
    running: Iterable[TrialPlan],
    *,
    apart: Collection[str] = (),
) -> bool:
    """Whether `plan` may start now.

    A cluster-wide exclusive trial runs alone in the run: it starts when nothing runs, nothing
    starts beside it, and no other trial starts while one is still to run (they go first).
    The experiments named in `apart` run on a cluster of their own (the fault cluster): one
    of their trials (group) starts when no other of them runs, and the others neither wait
    for them nor hold them up. An approach-wide exclusive trial runs alone among its
    approach's trials (none running, none left to run), and nothing of that approach starts
    beside it."""
    active = list(running)
    if plan.experiment.name in apart:
        return not any(p.experiment.name in apart for p in active)
    active = [p for p in active if p.experiment.name not in apart]
    queue = [p for p in queue if p.experiment.name not in apart]
    if any(p.experiment.cluster_wide for p in active):
        return False
    if plan.experiment.cluster_wide:
        return not active
    if any(p.experiment.cluster_wide for p in queue):
        return False
    if any(p.experiment.exclusive and p.approach == plan.approach for p in active):
        return False
    if not plan.experiment.exclusive:
        return True
    same = [p for p in [*active, *queue] if p.approach == plan.approach and p is not plan]
    return not any(not p.experiment.exclusive for p in same) and not any(p in active for p in same)


def runnable(request: RunRequest, *, embedded: bool) -> tuple[RunRequest, dict[str, str]]:
    """The request without the experiments this cluster (or the app) cannot run, and why each
    was left out (experiment -> reason). Raises a one-line usage error when nothing is left.

    Decided per approach: an experiment applies to an approach it is meant for
    (`Approach.applies_to`) whose own arm deploys what it acts on (`App.parts`: that arm's
    desired state, never another arm's); it is left out of the run only when that holds for
    none of them. Each kept experiment records, for every approach of the run it has no
    trials of, the reason (`ExperimentSpec.skipped_for`): reports say it, never a bare n/a."""
    app = request.app
    own_operator = app.own_operator(request.approaches)
    skipped: dict[str, str] = {}
    kept: list[ExperimentSpec] = []
    for spec in request.experiments:
        meant = [a for a in request.approaches if approaches.get(a).applies_to(spec)]
        unmet: dict[str, str] = {}
        for name in meant:
            reason = spec.unmet(
                embedded=embedded, workload=app.parts(name), own_operator=own_operator
            )
            if reason is not None:
                unmet[name] = reason
        if meant and len(unmet) == len(meant):
            skipped[spec.name] = _one_reason(unmet)
            continue
        # Every approach of the run without trials of it, in the run's order, with the reason.
        why = {
            a: unmet.get(a) or spec.not_for(a)
            for a in request.approaches
            if a in unmet or a not in meant
        }
        running = tuple(a for a in spec.approaches if a not in unmet)
        kept.append(replace(spec, approaches=running, skipped_for=why))
    if not kept:
        reasons = "; ".join(f"{name} {reason}" for name, reason in skipped.items())
        raise CompareError(f"nothing to run on this cluster: {reasons}", exit_code=EXIT_USAGE)
    return replace(request, experiments=tuple(kept)), skipped


def _one_reason(reasons: Mapping[str, str]) -> str:
    """One line for an experiment left out for every approach: their shared reason, else
    each approach's."""
    distinct = set(reasons.values())
    if len(distinct) == 1:
        return distinct.pop()
    return "; ".join(f"{approach}: {reason}" for approach, reason in reasons.items())


def new_run_id(now: datetime) -> str:
    return f"{now:%Y%m%dT%H%M%SZ}-{secrets.token_hex(2)}"


@dataclass
class Run:
    """One `compare run`: build it, then `execute()` in the main thread."""

    cluster: ClusterTarget
    request: RunRequest
    listener: Listener = field(default_factory=_Quiet)

    def __post_init__(self) -> None:
        self.cluster = recognised(self.cluster)
        # Left out before anything is planned: they appear nowhere in results.json.
        self.request, self.skipped = runnable(self.request, embedded=self.cluster.embedded)
        self.plans = plan_trials(self.request)
        self.approaches = configured(self.request)
        self.windows = heal_windows(self.request)
        started = datetime.now(UTC)
        self.run_id = new_run_id(started)
        self.run_dir = self.request.output_dir / self.run_id
        self.cancel = threading.Event()
        self.results = initial_results(self.cluster, self.request, self.run_id, started)
        self.results.clusters_used = 1  # the run's own, and each sibling a trial ran on
        if self.results.target is not None or self.skipped:
            # The report lists them with the reason (a fault on a ConfigMap the WebApp has not).
            self.results.skipped = [
                SkippedExperiment(name=name, reason=reason) for name, reason in self.skipped.items()
            ]
        self._lock = threading.Lock()
        self._dumped: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.notes: list[str] = []
        # The fault cluster, when the run has one (`compare.run.sibling`); made in `execute`.
        self.sibling: FaultCluster | None = None
        if (
            self.request.fault_cluster
            and self.cluster.embedded
            and sibling.splittable(self.request.app, list(self.request.experiments))
        ):
            self.sibling = FaultCluster(self.cluster, self.run_id)
        # The experiments whose trials run there (`compare.run.sibling.movable`).
        self._moved_names: frozenset[str] = frozenset(
            s.name for s in self.request.experiments if self.sibling and sibling.movable(s)
        )
        # Trials that cannot share a cluster: spread over siblings (`compare.run.spread`).
        self.cluster_limit = 1
        self.trial_clusters: list[SiblingCluster] = []
        if self.request.cannot_share and self.cluster.embedded:
            self.cluster_limit = self.request.clusters or spread.default_clusters()
            movable = [p for p in self.plans if self._movable(p)]
            count = spread.siblings_wanted(self.cluster_limit, len(movable), len(self.plans))
            self.trial_clusters = [
                SiblingCluster(self.cluster, f"{self.run_id.lower()}-{i}", "the trial cluster")
                for i in range(2, count + 2)
            ]
        # Where each started trial runs (`MAIN` or a sibling's name), and each place's context.
        self._placed: dict[str, str] = {}
        self._contexts: dict[str, TrialContext] = {}
        self.ctx = TrialContext(
            run_id=self.run_id,
            run_dir=self.run_dir,
            cluster=self.cluster,
            app=self.request.app,
            heal_window=self.request.heal_window,
            windows={n: w.heal_window_seconds for n, w in self.windows.items()},
            settle=self.request.settle,
            recheck=self.request.recheck,
            keep=self.request.keep,
            cancel=self.cancel,
            ledger=Ledger(),
            listener=self.listener,
            deploy_timeout=self.request.deploy_timeout,
            approaches=self.approaches,
        )
        # Before anything is deployed: an unwritable --output is one line, not a lost run.
        try:
            self.run_dir.mkdir(parents=True, exist_ok=True)
            self._save()
        except OSError as exc:
            raise CompareError(
                f"--output {self.request.output_dir}: cannot write ({exc.strerror or exc})"
            ) from exc
        self._contexts[MAIN] = self.ctx

    def _movable(self, plan: TrialPlan) -> bool:
        return spread.may_move(self.request.app, self.approaches[plan.approach], plan)

    def execute(self, listener: Listener | None = None) -> RunResults:
        """Run every planned trial; raises RunInterrupted on KeyboardInterrupt."""
        if listener is not None:
            self.listener = self.ctx.listener = listener
        probes.cancelled.clear()
        fault = self.sibling
        siblings = [*([fault] if fault is not None else []), *self.trial_clusters]
        others = tuple(s.listed for s in siblings)
        with (
            pointed_at(self.cluster, *others),
            _chaostoolkit_log(self.run_dir / "chaostoolkit.log"),
        ):
            try:
                if fault is not None:
                    # Made while the run's own cluster is prepared and its trials start.
                    fault.start(self.request.app, self.approaches)
                    self._note(f"cluster-wide faults on the fault cluster {fault.name!r}")
                # Each with the shared parts of the approaches whose trials may go there.
                moving = {p.approach for p in self.plans if self._movable(p)}
                for made in self.trial_clusters:
                    made.start(
                        self.request.app,
                        {n: a for n, a in self.approaches.items() if n in moving},
                    )
                for approach in self.approaches.values():
                    self.request.app.prepare(approach, self.cluster)
                # A group on the fault cluster does not take a place of the run's cluster.
                # A trial cluster runs one trial at a time.
                width = (
                    self.request.parallel
                    + (len(self.approaches) if fault else 0)
                    + len(self.trial_clusters)
                )
                with ThreadPoolExecutor(max_workers=width, thread_name_prefix="trial") as pool:
                    self._run_all(pool, schedule(self.plans), self.request.parallel)
            except KeyboardInterrupt:
                self._interrupted()
                raise RunInterrupted(self.results, self.run_dir) from None
            finally:
                try:
                    self._remove_leftovers()
                finally:
                    if fault is not None:
                        self.ctx.cleanup_errors.extend(fault.close())
                    made_for, self.trial_clusters = self.trial_clusters, []
                    self.ctx.cleanup_errors.extend(spread.close_all(made_for))
        with self._lock:
            self.results.complete = True
            self.results.finished_at = datetime.now(UTC)
            self._save()
        return self.results

    def _apart(self) -> bool:
        """Whether the cluster-wide trials run on the fault cluster: it is being made or
        ready; once it failed, they run here as without it (said once)."""
        fault = self.sibling
        if fault is None:
            return False
        if fault.failed is not None:
            self._note(
                f"could not make the fault cluster ({fault.failed}): the cluster-wide faults"
                " run on the run's cluster, alone"
            )
            self._moved_names = frozenset()
            self.sibling = None
            self.ctx.cleanup_errors.extend(fault.close())
            return False
        return True

    def _may_start(
        self, plan: TrialPlan, queue: Sequence[TrialPlan], running: Sequence[TrialPlan]
    ) -> bool:
        apart = self._moved_names if self._apart() else frozenset()
        if plan.experiment.name in apart:
            assert self.sibling is not None
            return self.sibling.ready.is_set() and admissible(plan, queue, running, apart=apart)
        here = [p for p in running if p.experiment.name not in apart]
        return len(here) < self.request.parallel and admissible(plan, queue, running, apart=apart)

    def _ready_trial_clusters(self) -> list[str]:
        """The trial clusters ready for trials, in order; one that could not be made is said
        once, deleted, and its trials go to the other clusters."""
        for failed in [s for s in self.trial_clusters if s.failed is not None]:
            self._note(
                f"could not make the trial cluster {failed.name!r} ({failed.failed}): its"
                " trials run on the other clusters"
            )
            self.trial_clusters.remove(failed)
            self.ctx.cleanup_errors.extend(failed.close())
        return [s.name for s in self.trial_clusters if s.ready.is_set()]

    def _next(
        self, queue: Sequence[TrialPlan], running: Sequence[TrialPlan]
    ) -> tuple[TrialPlan, str] | None:
        """The next trial to start and where (`compare.run.spread.next_start`): the run's
        cluster (or the fault cluster, for its experiments) by their own rules, else an idle
        trial cluster."""
        ready = self._ready_trial_clusters()
        on = {name: [p for p in running if self._placed.get(p.slug) == name] for name in ready}
        siblings = {s.name for s in self.trial_clusters}
        here = [p for p in running if self._placed.get(p.slug) not in siblings]
        found = spread.next_start(
            queue,
            on,
            ready=ready,
            room=lambda p: self._may_start(p, queue, here),
            movable=self._movable,
        )
        if found is None:
            return None
        plan, where = found
        if where == MAIN and self.sibling is not None and plan.experiment.name in self._moved_names:
            where = self.sibling.name
        return plan, where

    def _context(self, where: str) -> TrialContext:
        """The trials' context on `where` (`MAIN`, the fault cluster, a trial cluster)."""
        if where not in self._contexts:
            target = next(
                s.target
                for s in [*([self.sibling] if self.sibling else []), *self.trial_clusters]
                if s.name == where
            )
            self._contexts[where] = replace(
                self.ctx, cluster=target, ledger=Ledger(), secrets=trial_secrets(target)
            )
        return self._contexts[where]

    def _ctx(self, plan: TrialPlan) -> TrialContext:
        """The context of the plan's trial: of the cluster it started on, or starts on (the
        fault cluster's for a moved one)."""
        where = self._placed.get(plan.slug)
        if where is None:
            moved = self.sibling is not None and plan.experiment.name in self._moved_names
            where = self.sibling.name if moved and self.sibling is not None else MAIN
        return self._context(where)

    def _run_all(self, pool: ThreadPoolExecutor, plans: Sequence[TrialPlan], width: int) -> None:
        queue = list(plans)
        running: dict[Future[TrialResult], TrialPlan] = {}
        try:
            while queue or running:
                while True:
                    found = self._next(queue, list(running.values()))
                    if found is None:
                        break
                    plan, where = found
                    moved = plan.experiment.name in self._moved_names
                    group = (
                        [plan]
                        if where != MAIN and not moved
                        else self._group(plan, queue, len(self.approaches) if moved else width)
                    )
                    fault = (
                        SharedFault(
                            [p.slug for p in group],
                            wait_s=self._shared_wait(),
                            cancelled=self.cancel,
                        )
                        if len(group) > 1
                        else None
                    )
                    # A group is one experiment's: all of it starts where its first does.
                    for member in group:
                        queue.remove(member)
                        self._placed[member.slug] = where
                        ctx = self._context(where)
                        running[pool.submit(run_trial, ctx, member, fault)] = member
                if not running:
                    # Only the fault cluster's groups are left, and it is not ready yet.
                    self._wait_sibling()
                    continue
                done, _ = wait(running, timeout=WAIT_TICK_S, return_when=FIRST_COMPLETED)
                wide_over: ClusterTarget | None = None
                for future in done:
                    plan = running.pop(future)
                    self._record(plan, future)
                    ran_on = self._ctx(plan).cluster
                    if plan.experiment.cluster_wide:
                        wide_over = ran_on
                    if plan.experiment.exclusive:
                        self._recover(plan.approach, cluster=ran_on)
                if wide_over and not any(p.experiment.cluster_wide for p in running.values()):
                    # Its rollbacks restart the control plane (and the operator); make sure,
                    # once the last trial of the group is over and before any other starts.
                    self._restore_cluster(wide_over)
                    self._recover(cluster=wide_over)
        except KeyboardInterrupt:
            # Cancel first, then wait: trials under way stop at their next check and clean up
            # their namespaces; one that had already finished measuring is still recorded.
            self.cancel.set()
            probes.cancelled.set()
            for future in running:
                future.cancel()
            for future, plan in running.items():
                if not future.cancelled():
                    wait([future])
                    self._record(plan, future)
            raise

    @staticmethod
    def _group(plan: TrialPlan, queue: Sequence[TrialPlan], width: int) -> list[TrialPlan]:
        """The trials that start with `plan`: with a fault they can share, the same trial of
        the experiment's other approaches (as many as run at once); else `plan` alone."""
        if not plan.experiment.shares_fault:
            return [plan]
        others = [
            p
            for p in queue
            if p is not plan and p.experiment.name == plan.experiment.name and p.trial == plan.trial
        ]
        return [plan, *others][: max(1, width)]

    def _wait_sibling(self) -> None:
        """Wait (a tick at a time, so Ctrl-C is prompt) until the fault cluster is ready or
        failed, within its deadline; past it, it failed."""
        fault = self.sibling
        if fault is None or fault.settled():
            time.sleep(WAIT_TICK_S)  # not expected; never a busy loop
            return
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not fault.settled():
            if time.monotonic() > deadline:
                fault.failed = f"not ready within {READY_TIMEOUT_S:.0f}s"
                return
            fault.ready.wait(WAIT_TICK_S)

    def _note(self, text: str) -> None:
        self.notes.append(text)
        note = getattr(self.listener, "note", None)  # a listener may show notes, or not
        if note is not None:
            note(text)

    def _shared_wait(self) -> float:
        """How long a trial of a shared fault waits for the others at one of its actions:
        they may still be deploying, or in their heal window."""
        request = self.request
        window = max(self.ctx.windows.values(), default=request.heal_window)
        return request.deploy_timeout + 2 * (window + request.settle) + 60.0

    def _record(self, plan: TrialPlan, future: Future[TrialResult]) -> None:
        try:
            result = future.result()
        except Cancelled:
            return
        except Exception as exc:  # run_trial turns failures into error results; belt and braces
            result = TrialResult(
                experiment=plan.experiment.name,
                approach=plan.approach,
                trial=plan.trial,
                status="error",
                heal_window_seconds=self.ctx.window(plan.approach),
                error=f"{type(exc).__name__}: {exc}",
            )
        where = self._placed.get(plan.slug, MAIN)
        if where != MAIN:
            result = result.model_copy(update={"cluster": where})
        with self._lock:
            # Serialised once: rewriting results.json after each trial stays cheap.
            self._dumped[result.key] = result.model_dump(mode="json", by_alias=True)
            self.results.trials.append(result)
            elsewhere = {t.cluster for t in self.results.trials if t.cluster is not None}
            self.results.clusters_used = 1 + len(elsewhere)
            order = {(p.experiment.name, p.approach, p.trial): i for i, p in enumerate(self.plans)}
            self.results.trials.sort(key=lambda t: order.get(t.key, len(order)))
            self._save()
        self.listener.finished(plan, result)

    def _interrupted(self) -> None:
        """Save what finished as an incomplete run."""
        self.cancel.set()
        probes.cancelled.set()
        with self._lock:
            self.results.complete = False
            self.results.finished_at = None
            self._save()

    def _restore_cluster(self, cluster: ClusterTarget | None = None) -> None:
        """Every component of the embedded cluster (the run's, or `cluster`) running and
        leading again (a no-op on a healthy cluster); only after an experiment that stops
        them."""
        cluster = cluster or self.cluster
        if cluster.embedded:
            control_plane.restore(EmbeddedCluster(cluster_key(cluster)))

    def _recover(self, *names: str, cluster: ClusterTarget | None = None) -> None:
        """The shared parts of these approaches (all of the run's: none named) running again
        on the cluster (the run's by default) after a fault that may have stopped them (the
        operator after operator-down-drift). Only the toolkit's own: a target's operator is
        the target's business (`App.recover`)."""
        for name in names or tuple(self.approaches):
            self.request.app.recover(self.approaches[name], cluster or self.cluster)

    def _remove_leftovers(self) -> None:
        moved = self._moved_names
        if any(s.cluster_wide and s.name not in moved for s in self.request.experiments):
            try:
                self._restore_cluster()
            except Exception as exc:
                self.ctx.cleanup_errors.append(f"the control plane: {exc}")
        leftovers = self.ctx.ledger.items()
        if self.request.keep or not leftovers:
            return
        api = self.cluster.api_client()
        try:
            # An API server that was down (the reason the trials could not clean up) gets a
            # bounded time to come back before the namespaces are reported as left behind;
            # one that does not come back is waited for once, never once per try.
            if not _wait_for_api(api, LEFTOVER_API_WAIT_S):
                for namespace, _ in leftovers:
                    self.ctx.cleanup_errors.append(f"{namespace}: {_API_GONE}")
                return
            # A WebApp's finalizer needs the operator: never delete its namespace without it
            # (and without it, say what is left rather than fail the saved run).
            try:
                self._recover()
            except Exception as exc:
                for namespace, _ in leftovers:
                    self.ctx.cleanup_errors.append(f"{namespace}: {first_line(exc)}")
                return
            gone = False
            for namespace, approach in leftovers:
                if gone:
                    self.ctx.cleanup_errors.append(f"{namespace}: {_API_GONE}")
                    continue
                # A control plane just restarted may drop a connection or two: a few tries.
                for attempt in range(LEFTOVER_ATTEMPTS):
                    try:
                        remove_namespace(
                            self.cluster,
                            api,
                            self.request.app,
                            namespace,
                            self.ctx.approach(approach),
                        )
                        self.ctx.ledger.discard(namespace)
                        break
                    except Exception as exc:
                        if attempt + 1 == LEFTOVER_ATTEMPTS:
                            self.ctx.cleanup_errors.append(f"{namespace}: {first_line(exc)}")
                        elif not _wait_for_api(api, LEFTOVER_API_WAIT_S):
                            self.ctx.cleanup_errors.append(f"{namespace}: {first_line(exc)}")
                            gone = True
                            break
        finally:
            api.close()

    def _save(self) -> None:
        data = self.results.model_dump(mode="json", by_alias=True, exclude={"trials"})
        data["trials"] = [self._dumped[t.key] for t in self.results.trials]
        save_results_json(data, self.run_dir)

    @property
    def cleanup_errors(self) -> list[str]:
        return list(self.ctx.cleanup_errors)


def initial_results(
    cluster: ClusterTarget, request: RunRequest, run_id: str, started: datetime
) -> RunResults:
    """A run's results.json before its first trial: where, what, with which settings."""
    approaches = configured(request)
    results = RunResults(
        run_id=run_id,
        started_at=started,
        finished_at=None,
        complete=False,
        tool_version=__version__,
        cluster=cluster_info(cluster),
        app=request.app.info(),
        settings=RunSettings(
            approaches=list(request.approaches),
            experiments=[s.name for s in request.experiments],
            trials=request.trials,
            heal_window_seconds=request.heal_window,
            parallel=request.parallel,
            settle_seconds=request.settle,
            recheck_interval_seconds=request.recheck,
            heal_windows=heal_windows(request),
            approach_settings={
                name: recorded for name, a in approaches.items() if (recorded := a.run_settings())
            },
        ),
        experiments=[s.info() for s in request.experiments],
        trials=[],
    )
    results.target = request.app.target_info()
    if request.left_out:
        results.preflight_findings = [
            PreflightFinding(approach=name, finding=line) for name, line in request.left_out.items()
        ]
    return results


def record_preflight_error(cluster: ClusterTarget, request: RunRequest, error: str) -> Path:
    """The results.json of a run that stopped in its preflight, before any trial: no trial,
    not complete, `preflightError` the line it stopped with; its path."""
    started = datetime.now(UTC)
    run_id = new_run_id(started)
    results = initial_results(recognised(cluster), request, run_id, started)
    results.finished_at = datetime.now(UTC)
    results.preflight_error = error
    run_dir = request.output_dir / run_id
    save_results_json(results.to_json(), run_dir)
    return run_dir / RESULTS_FILE


def cluster_info(target: ClusterTarget) -> ClusterInfo:
    api = target.api_client()
    try:
        version = client.VersionApi(api).get_code().git_version
        server = api.configuration.host
    finally:
        api.close()
    return ClusterInfo(
        server=server,
        kubernetes_version=version,
        embedded=target.embedded,
        context=target.context,
    )


def _wait_for_api(api: client.ApiClient, timeout: float) -> bool:
    """Whether the API server answers within `timeout` (polled each second)."""

    def answers() -> bool:
        try:
            client.VersionApi(api).get_code(_request_timeout=2.0)
        except Exception:  # any failure to answer: down still, try again until the deadline
            return False
        return True

    return poll(answers, deadline=timeout, interval=1.0)[0]


@contextmanager
def _chaostoolkit_log(path: Path) -> Iterator[None]:
    """chaoslib's log of every trial in the run directory (as `chaos run` keeps its own)."""
    logger = logging.getLogger("chaostoolkit")
    # Opened by the safe helper: never through a symlink, never a FIFO or a device.
    stream = io.TextIOWrapper(
        outputfile.open_append(path, mode=0o644), encoding="utf-8", line_buffering=True
    )
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logging.Formatter("%(asctime)s %(threadName)s %(levelname)s %(message)s"))
    previous = logger.level, logger.propagate
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    # Only into the file: on the terminal, chaoslib's lines would tear the progress display.
    logger.propagate = False
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous[0])
        logger.propagate = previous[1]
        handler.close()
        stream.close()
