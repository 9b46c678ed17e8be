"""One trial: its own namespace, deploy, check the steady state, inject, measure, clean up.

chaostoolkit plays the experiment (hypothesis, method with the injection and the wait,
hypothesis again, rollbacks) and writes the journal; the observer, in parallel, reads the live
state around the injection and the judge decides from those readings alone. A failure anywhere
becomes an `error` trial with one line; only a cancelled run (Ctrl-C) drops a trial.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import re
import secrets
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from kubernetes import client

from compare import approaches, kube
from compare.approaches import Approach, Detector, contract
from compare.chaos import shared
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.errors import CompareError, first_line
from compare.kube.events import EventWatch
from compare.results import CrossCheck, TrialResult, chaos_agrees
from compare.results.writers import announced
from compare.run.app import App
from compare.run.detect import Detection, first_detection, read_events
from compare.run.evidence import TrialJudge, build_evidence, measure
from compare.run.experiments import ExperimentSpec, configuration_defaults
from compare.run.health import cluster_health, own_outages
from compare.run.leftovers import release_finalizers
from compare.run.observe import Observer
from compare.run.owners import RUN_LABEL as RUN_LABEL
from compare.run.owners import owner_annotations
from compare.run.runner import (
    ActivityTimedOut,
    InjectionClock,
    epoch,
    run_experiment_in_thread,
    write_journal,
)
from compare.run.sibling import point
from compare.run.workload import Workload, app_configuration

MANAGED_BY = "compare-run"
# How long to look for the operator's Event once the fault healed (it is posted asynchronously).
EVENT_GRACE_S = 2.0
# The observer decides within window + settle; this bounds the join beyond that.
OBSERVER_GRACE_S = 30.0
# Added to the heal window and settle period for an activity's default deadline.
ACTIVITY_MARGIN_S = 60.0

_EXCEPTION_PREFIX = re.compile(r"^((?:[A-Za-z_][\w.]*: )+)(.*)$")


class Cancelled(Exception):
    """The run was interrupted while this trial was under way: it has no result."""


@dataclass(frozen=True)
class TrialPlan:
    experiment: ExperimentSpec
    approach: str
    trial: int

    @property
    def slug(self) -> str:
        return f"{self.experiment.name}-{self.approach}-{self.trial}"

    @property
    def label(self) -> str:
        return f"{self.experiment.name}/{self.approach} #{self.trial}"


class Listener(Protocol):
    """Progress of the run, called from worker threads."""

    def phase(self, plan: TrialPlan, phase: str) -> None: ...

    def finished(self, plan: TrialPlan, result: TrialResult) -> None: ...


@dataclass
class Ledger:
    """Namespaces this run created and has not removed yet (thread-safe)."""

    _items: dict[str, str] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, namespace: str, approach: str) -> None:
        with self._lock:
            self._items[namespace] = approach

    def discard(self, namespace: str) -> None:
        with self._lock:
            self._items.pop(namespace, None)

    def items(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._items.items())


@dataclass
class TrialContext:
    """What every trial of one run shares."""

    run_id: str
    run_dir: Path
    cluster: ClusterTarget
    app: App
    # The user's heal window, and per approach its trials' (`compare.run.engine.heal_windows`:
    # with the approach's cadence); an approach not in `windows` has `heal_window`.
    heal_window: float
    settle: float
    recheck: float
    keep: bool
    cancel: threading.Event
    ledger: Ledger
    listener: Listener
    cleanup_errors: list[str] = field(default_factory=list)
    # Each deploy into a trial's namespace within this.
    deploy_timeout: float = DEPLOY_TIMEOUT_S
    # The run's approaches with their settings (`Approach.configured`); one not here is the
    # registry's, with its defaults.
    approaches: Mapping[str, Approach] = field(default_factory=dict)
    windows: Mapping[str, float] = field(default_factory=dict)
    # Secrets that point the trials' activities at `cluster` when it is not the one the
    # process is pointed at (the run's fault cluster, `compare.run.sibling.point`).
    secrets: Mapping[str, str] | None = None

    def approach(self, name: str) -> Approach:
        return self.approaches.get(name) or approaches.get(name)

    def window(self, approach: str) -> float:
        """The heal window of this approach's trials."""
        return self.windows.get(approach, self.heal_window)


def namespace_for(run_id: str, plan: TrialPlan) -> str:
    short = approaches.get(plan.approach).short
    name = re.sub(r"[^a-z0-9-]+", "-", plan.experiment.name.lower()).strip("-")
    suffix = secrets.token_hex(2)
    head = f"cmp-{short}-{name}"[: 63 - len(f"-{plan.trial}-{suffix}")].rstrip("-")
    return f"{head}-{plan.trial}-{suffix}"


def run_trial(
    ctx: TrialContext, plan: TrialPlan, fault: shared.SharedFault | None = None
) -> TrialResult:
    """Carry out one trial; raises Cancelled when the run is interrupted meanwhile. With
    `fault`, its cluster-wide actions are shared with the other trials of that group."""
    namespace = namespace_for(ctx.run_id, plan)
    api = ctx.cluster.api_client()
    recorder = _Recorder(plan, namespace, ctx.window(plan.approach))
    member = shared.join(fault, plan.slug) if fault is not None else None
    try:
        return _carry_out(ctx, plan, namespace, api, recorder, member)
    except (Cancelled, KeyboardInterrupt):
        raise
    except Exception as exc:
        if ctx.cancel.is_set():
            # Ctrl-C reaches helm/kubectl children too: their failure is the interruption.
            raise Cancelled from exc
        if isinstance(exc, CompareError):
            return recorder.error(exc.message)
        if isinstance(exc, client.ApiException):
            return recorder.error(f"Kubernetes API: {exc.status} {exc.reason}")
        return recorder.error(first_line(exc))
    finally:
        if member is not None:
            shared.part(member)  # the others go on without waiting for this trial
        if not ctx.keep:
            ctx.listener.phase(plan, "cleaning up")
            try:
                approach = ctx.approach(plan.approach)
                remove_namespace(ctx.cluster, api, ctx.app, namespace, approach)
                ctx.ledger.discard(namespace)
            except Exception as exc:  # the result stands; the engine retries at the end
                ctx.cleanup_errors.append(f"{namespace}: {first_line(exc)}")
        api.close()


def _carry_out(
    ctx: TrialContext,
    plan: TrialPlan,
    namespace: str,
    api: client.ApiClient,
    recorder: _Recorder,
    member: str | None = None,
) -> TrialResult:
    spec = plan.experiment
    window = ctx.window(plan.approach)
    ctx.listener.phase(plan, "deploying")
    create_namespace(api, namespace, ctx.run_id, keep=ctx.keep)
    ctx.ledger.add(namespace, plan.approach)
    approach = ctx.approach(plan.approach)
    deployed = ctx.app.deploy(
        approach, ctx.cluster, api, namespace, timeout=ctx.deploy_timeout, cancel=ctx.cancel
    )
    _check(ctx)
    desired, workload = deployed.desired, deployed.workload
    document = experiment_for(spec, ctx, plan.approach, namespace, workload)
    if member is not None:
        document["configuration"][shared.CONFIG_KEY] = member
    # The evidence names the trial's own parts (`${webapp_container}`, the workload's kind).
    target, tracked = spec.evidence_for(configuration_defaults(document["configuration"]))
    observer = Observer(
        api,
        namespace,
        window=window,
        settle=ctx.settle,
        recheck=ctx.recheck,
        cancel=ctx.cancel,
        kinds=desired.kinds,
        health=cluster_health(ctx.cluster, api, own_outages(document)),
    )
    judge = observer.begin(lambda baseline: TrialJudge(desired, target, tracked, baseline))
    if judge.baseline_problems:
        observer.experiment_over()
        observer.finish(timeout=5.0)
        return recorder.error(
            f"the desired state did not hold before the injection: {judge.baseline_problems[0]}"
        )
    clock = InjectionClock(
        spec.injection, lambda run: observer.injected(epoch(run["start"]), epoch(run["end"]))
    )
    detector = approach.detector(ctx.app.target)
    events = _watch_events(api, namespace, deployed.events_on, ctx, detector, window)
    try:
        ctx.listener.phase(plan, "injecting")
        journal_name = f"journals/{plan.slug}.json"
        try:
            journal = run_experiment_in_thread(
                document,
                [clock],
                default_deadline=activity_deadline(ctx, window),
                cancel=ctx.cancel,
            )
        except ActivityTimedOut as exc:
            if exc.journal is not None:
                write_journal(exc.journal, ctx.run_dir / journal_name)
                recorder.journal = journal_name
            _check(ctx)
            return recorder.error(str(exc))
        finally:
            observer.experiment_over()
            observer.finish(timeout=window + ctx.settle + OBSERVER_GRACE_S)
        write_journal(journal, ctx.run_dir / journal_name)
        recorder.journal = journal_name
        _check(ctx)

        run = clock.run
        problem = _not_injected(spec.injection, journal, run, ctx.run_dir)
        if problem is not None:
            return recorder.error(problem)
        assert run is not None  # `_not_injected` said so
        injection_started, injected_at = epoch(run["start"]), epoch(run["end"])
        recorder.injected_at = injected_at
        if observer.error is not None:
            return recorder.error(f"observing the live state failed: {observer.error}")
        measurement = measure(
            judge,
            observer.observations,
            injection_started=injection_started,
            injected_at=injected_at,
            window=window,
            settle=ctx.settle,
            observed_until=observer.observed_until,
            reported=_reported(run, injected_at),
        )
        detection = None
        if detector is not None:
            # The operator may correct the fault before the delete/patch call has even returned
            # to chaostoolkit, so its Event can precede `injected_at`: search from the call's start.
            detection = _detect(
                api,
                namespace,
                ctx,
                detector,
                deployed.events_on,
                injection_started,
                measurement.status == "healed",
                events,
            )
        if detection is not None:
            # Kubernetes wrote the heal, the approach set it off (its Event says so).
            healed_by = announced(measurement.healed_by, detection.component)
            measurement = dataclasses.replace(measurement, healed_by=healed_by)
        chaos = _verdict(journal)
        evidence = build_evidence(
            judge,
            measurement,
            injected_at=injected_at,
            settle=ctx.settle,
            detected_by=detection.detected_by if detection else None,
            chaos_verdict=chaos,
            chaos_agrees=chaos_agrees(measurement.status, chaos),
            cross_check=CrossCheck(reads=observer.rereads, disagreements=observer.disagreements),
            extra={"injection": spec.injection, "readings": measurement.readings},
        )
        detect_s = None
        if detection is not None and detection.at is not None:
            detect_s = round(max(detection.at - injected_at, 0.0), 4)
        return TrialResult(
            experiment=spec.name,
            approach=plan.approach,
            trial=plan.trial,
            namespace=namespace,
            status=measurement.status,
            time_to_heal_seconds=_round(measurement.time_to_heal),
            time_to_first_heal_seconds=_round(measurement.time_to_first_heal),
            time_to_detect_seconds=detect_s,
            # Exactly the journal's timestamp of the injection's end.
            injected_at=datetime.fromisoformat(run["end"]),
            heal_window_seconds=window,
            evidence=evidence,
            journal=journal_name,
        )

    finally:
        # However the trial ended: the watch never outlives it.
        if events is not None:
            events.stop()


def _not_injected(
    injection: str, journal: dict[str, Any], run: dict[str, Any] | None, run_dir: Path
) -> str | None:
    """Why the journal shows no fault made as the experiment describes it (None: it was):
    the injection did not run, failed, or its process exited non-zero, or an activity before
    it failed (say, the API server was not restarted) - no verdict about such a trial."""
    if run is None:
        return (
            f"the injection {injection!r} did not run"
            f" (experiment ended {_verdict(journal)}{_failure(journal)})"
        )
    if run.get("status") is None:
        # Not an ActivityFailed: chaoslib aborted the experiment and logged the traceback.
        missing = _missing_module(run)
        if missing is not None:
            # Validation imports nothing of the file's: a module is first looked for now.
            return (
                f"the injection {injection!r} could not run: no Python module {missing!r}"
                " (a module of your own must be importable when the trial runs: PYTHONPATH)"
            )
        return (
            f"the injection {injection!r} raised an unexpected error and chaostoolkit"
            f" aborted the experiment (traceback in {run_dir / 'chaostoolkit.log'})"
        )
    if run.get("status") != "succeeded":
        return f"the injection {injection!r} failed: {_exception(run)}"
    exited = _process_failure(run)
    if exited is not None:
        # chaoslib records a process that exited non-zero as succeeded: no fault was made.
        return f"the injection {injection!r} {exited}"
    setup = _failed_before(journal, injection)
    if setup is not None:
        return f"{setup['activity']['name']!r}, before the injection, failed: {_exception(setup)}"
    return None


def _missing_module(run: dict[str, Any]) -> str | None:
    """The top-level package of a Python activity's module when it cannot be found (looked up
    on sys.path, not imported)."""
    provider = (run.get("activity") or {}).get("provider") or {}
    module = provider.get("module") if provider.get("type") == "python" else None
    if not isinstance(module, str) or not module:
        return None
    top = module.split(".")[0]
    try:
        found = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        found = None
    return top if found is None else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 4)


def _reported(run: dict[str, Any], injected_at: float) -> dict[str, Any] | None:
    """What our drift actions say they stored (`value`): the `during` of the evidence."""
    output = run.get("output")
    if not isinstance(output, dict) or "value" not in output:
        return None
    return {"value": output["value"], "at": injected_at}


def experiment_for(
    spec: ExperimentSpec,
    ctx: TrialContext,
    approach: str,
    namespace: str,
    workload: Workload,
) -> dict[str, Any]:
    """The experiment with this trial's values in its configuration (as `chaos run --var`):
    the app's parts it acts on (`compare.run.workload`) among them. The probes' app file is
    the app's own (a target file: they judge the trial's release)."""
    document = spec.fresh_document()
    configuration = document.setdefault("configuration", {})
    configuration.update(
        {
            "webapp_approach": approach,
            "webapp_app_file": str(ctx.app.source.resolve()),
            # The wait step's deadline: this approach's trial window.
            "heal_window": ctx.window(approach),
            # The wait step's settle period: the judge's, so chaostoolkit's after-probe reads
            # the state the judge calls healed, not a rollout still finishing.
            "settle": ctx.settle,
            **app_configuration(workload, ctx.app.name, namespace),
        }
    )
    if ctx.secrets:
        point(document, ctx.secrets)
    return document


def create_namespace(
    api: client.ApiClient, namespace: str, run_id: str, *, keep: bool = False
) -> None:
    labels = {"app.kubernetes.io/managed-by": MANAGED_BY, RUN_LABEL: run_id}
    # Its owner: a run killed before it removes the namespace is found by the next one
    # (`compare.run.owners`); one kept on purpose (`--keep`) is not a leftover.
    kube.ensure_namespace(
        api, namespace, labels=labels, annotations=owner_annotations(keep), exists_ok=False
    )


def remove_namespace(
    cluster: ClusterTarget,
    api: client.ApiClient,
    app: App,
    namespace: str,
    approach: contract.Deploys,
) -> None:
    """Remove what the approach deployed (the operator's CR first; a target's release, whose
    cluster-scoped objects the namespace does not hold), then the namespace.

    The namespace is deleted in the background: nothing later depends on it being gone.
    """
    # First a finalizer a fault left (an object stuck terminating): it would hold an
    # uninstall, and then the namespace, forever.
    release_finalizers(api, namespace)
    approach.cleanup(cluster, app.target.for_trial(namespace), namespace)
    kube.delete_namespace(api, namespace)


def _watch_events(
    api: client.ApiClient,
    namespace: str,
    name: str,
    ctx: TrialContext,
    detector: Detector | None,
    window: float,
) -> EventWatch | None:
    """The Events on the object that announces corrections, watched from before the injection
    until the detection is read (its deadline: the longest a trial may take from here)."""
    if detector is None:
        return None
    deadline = window + ctx.settle + OBSERVER_GRACE_S + EVENT_GRACE_S
    watch = EventWatch(api, namespace, name, deadline=deadline + activity_deadline(ctx, window))
    watch.begin()
    return watch


def _detect(
    api: client.ApiClient,
    namespace: str,
    ctx: TrialContext,
    detector: Detector,
    name: str,
    since: float,
    healed: bool,
    watch: EventWatch | None = None,
) -> Detection | None:
    # The Event is posted asynchronously: once healed, give it a moment to appear.

    def look() -> Detection | None:
        events = read_events(api, namespace, name, detector.custom, detector.kinds)
        arrivals = watch.arrivals() if watch is not None else []
        return first_detection(events, since, detector.custom, detector.kinds, arrivals)

    try:
        return kube.wait.poll(
            look,
            deadline=EVENT_GRACE_S if healed else 0.0,
            done=lambda found: found is not None,
            cancel=ctx.cancel,
        )[1]
    except kube.WaitCancelled:
        return None


def _check(ctx: TrialContext) -> None:
    if ctx.cancel.is_set():
        raise Cancelled


@dataclass
class _Recorder:
    """Builds the error result with whatever the trial had reached."""

    plan: TrialPlan
    namespace: str
    heal_window: float
    journal: str | None = None
    injected_at: float | None = None

    def error(self, message: str) -> TrialResult:
        return TrialResult(
            experiment=self.plan.experiment.name,
            approach=self.plan.approach,
            trial=self.plan.trial,
            namespace=self.namespace,
            status="error",
            injected_at=(
                datetime.fromtimestamp(self.injected_at, UTC) if self.injected_at else None
            ),
            heal_window_seconds=self.heal_window,
            error=message,
            journal=self.journal,
        )


def activity_deadline(ctx: TrialContext, window: float | None = None) -> float:
    """An activity's default deadline: the wait probe alone may take the heal window (the
    trial's, `window`) and the settle period; a control-plane restart or a slow API call gets
    a generous margin."""
    return (window if window is not None else ctx.heal_window) + ctx.settle + ACTIVITY_MARGIN_S


def _failed_before(journal: dict[str, Any], injection: str) -> dict[str, Any] | None:
    """The first method activity run before the injection that did not succeed (a process
    that exited non-zero included)."""
    for run in journal.get("run") or []:
        if run.get("activity", {}).get("name") == injection:
            return None
        if run.get("status") != "succeeded":
            return dict(run)
        exited = _process_failure(run)
        if exited is not None:
            return {**run, "exception": [f"the process {exited}"]}
    return None


def _process_failure(run: dict[str, Any]) -> str | None:
    """`exited with status N: <stderr's last line>` for a process activity that failed."""
    provider = (run.get("activity") or {}).get("provider") or {}
    output = run.get("output")
    if provider.get("type") != "process" or not isinstance(output, dict):
        return None
    code = output.get("status")
    if not isinstance(code, int) or code == 0:
        return None
    stderr = [line for line in str(output.get("stderr") or "").splitlines() if line.strip()]
    tail = f": {stderr[-1].strip()[:200]}" if stderr else ""
    return f"exited with status {code}{tail}"


def _verdict(journal: dict[str, Any]) -> str:
    return "deviated" if journal.get("deviated") else str(journal.get("status"))


def _failure(journal: dict[str, Any]) -> str:
    before = (journal.get("steady_states") or {}).get("before") or {}
    if before and not before.get("steady_state_met", True):
        return ": the steady-state hypothesis did not hold before the method"
    return ""


def _exception(run: dict[str, Any]) -> str:
    """One line from the journal's exception: `X: first line`, plus the API's own message.

    chaoslib wraps whatever an activity raised: `chaoslib.exceptions.ActivityFailed:
    kubernetes...NotFoundException: (404)` then headers and body on further lines.
    """
    parts = [str(part).strip() for part in run.get("exception") or [] if str(part).strip()]
    if not parts:
        return str(run.get("status"))
    # The last part is the final exception; earlier parts are chained causes' tracebacks.
    lines = parts[-1].splitlines()
    found = _EXCEPTION_PREFIX.match(lines[0])
    line = lines[0]
    if found is not None:
        kind = found.group(1).split(": ")[-2].rsplit(".", 1)[-1]
        line = f"{kind}: {found.group(2)}"
    body = next((x for x in lines if x.startswith("HTTP response body:")), None)
    if body is not None:
        try:
            message = json.loads(body.split(":", 1)[1]).get("message")
        except (ValueError, AttributeError):
            message = None
        if message:
            line = f"{line}: {message}"
    return line
