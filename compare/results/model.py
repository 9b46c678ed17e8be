"""The typed model of results.json (schemaVersion 4): camelCase in JSON, snake_case in Python.

Every model forbids unknown keys, so a typo in a hand-edited or foreign file is reported by
name instead of silently dropped; only `Evidence` and `ObjectUids` stay open, because an
approach may record more observations (another object kind, the CR's status) than listed.
A schemaVersion 1, 2 or 3 file is upgraded to this model on load (`compare.results.migrate`).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Final, Literal, Self

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    model_serializer,
    model_validator,
)
from pydantic.alias_generators import to_camel

from compare.results.migrate import upgrade

SCHEMA_VERSION: Final = 4
# Versions `load_results` reads; older ones are upgraded in memory (see migrate.py).
SUPPORTED_SCHEMA_VERSIONS: Final = (1, 2, 3, 4)

# healed: the desired state came back after the fault was seen and held for the settle
# period; not-healed: it did not (it may have come back briefly: a flap); no-fault: the
# injection changed nothing the judge checks, so nothing could heal (never counted as healed);
# error: the trial could not be carried out.
TrialStatus = Literal["healed", "not-healed", "no-fault", "error"]
STATUSES: tuple[TrialStatus, ...] = ("healed", "not-healed", "no-fault", "error")
# Results may name any approach (reports handle any); the toolkit's own are its registry's
# (`compare.approaches`).

FaultSeenHow = Literal["event", "reading", "injection-output"]

Name = Annotated[str, Field(min_length=1)]

# The ranges `compare run` accepts for what a run's settings record (its --trials,
# --heal-window, --settle, --parallel): the CLI bounds its options with them, and
# `compare check` refuses results past them. A thousand trials, an hour per trial: far
# beyond any real run; more is a typo (`1e9`), and such a plan would exhaust memory.
MAX_TRIALS = 1000
MAX_HEAL_WINDOW_S = 3600.0
MAX_SETTLE_S = 60.0
MAX_PARALLEL = 32
Seconds = Annotated[float, Field(ge=0)]


class _Model(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="forbid",
    )


class _Open(_Model):
    model_config = ConfigDict(extra="allow")


class ClusterInfo(_Model):
    """The cluster the run used."""

    server: str
    kubernetes_version: str | None = None
    embedded: bool
    context: str | None = None


class AppInfo(_Model):
    """The WebApp both approaches deployed; `spec` is the WebApp spec as JSON."""

    name: Name
    spec: dict[str, Any]
    # The kind of the app's custom resources (`WebApp`; a target's operator arm's own kind,
    # `Memcached`); absent in older files and for a target of charts alone.
    kind: Name | None = None

    @model_serializer(mode="wrap")
    def _kind_when_known(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("kind") is None:
            data.pop("kind", None)
        return data


class TargetInfo(_Model):
    """The target file a run deployed instead of the built-in WebApp (`compare run --target`)."""

    name: Name
    file: Name


class SkippedExperiment(_Model):
    """An experiment left out of the run: the cluster or the app has not what it acts on."""

    name: Name
    reason: Name


class PreflightFinding(_Model):
    """An arm left out of the run by its preflight, before anything was installed: why, in
    one line (`Argo CD rewrites secret.data.password on every sync ...`)."""

    approach: Name
    finding: Name


class ApproachWindow(_Model):
    """One approach's heal window in a run: the user's plus the approach's own cadence (the
    longest its schedule may leave a fault alone: Flux's interval), unless the run asked for
    the exact window (`--exact-heal-window`: then `cadenceAdded` is false)."""

    heal_window_seconds: float = Field(gt=0)
    cadence_seconds: Seconds = 0.0
    # What the cadence is made of ("HelmRelease interval 5 s + 5 % jitter"); None: it has none.
    cadence: str | None = None
    cadence_added: bool = False


class RunSettings(_Model):
    """What the user asked for: approaches, experiments, trials and timing."""

    approaches: list[Name]
    experiments: list[Name]
    trials: int = Field(ge=1)
    heal_window_seconds: float = Field(gt=0)
    parallel: int = Field(default=1, ge=1)
    # How often the live state was polled; None when it was watched (events, no polling).
    poll_interval_seconds: float | None = Field(default=None, gt=0)
    # How long the desired state must hold before a heal counts (the settled heal).
    settle_seconds: float = Field(default=1.0, ge=0)
    # The periodic full re-read that cross-checks a watch; None when there was none.
    recheck_interval_seconds: float | None = Field(default=None, gt=0)
    # Per approach with settings of its own, those settings as the approach records them
    # (`Approach.run_settings`: its names, JSON values) and reports show them
    # (`Approach.describe_settings`); an approach without settings has no entry.
    approach_settings: dict[Name, dict[Name, Any]] = Field(default_factory=dict)
    # Per approach, the heal window its trials had (`ApproachWindow`); absent in files written
    # before it (optional, added within schema 2: then every trial had `healWindowSeconds`).
    heal_windows: dict[Name, ApproachWindow] | None = None

    @model_serializer(mode="wrap")
    def _heal_windows_only_with_them(
        self, handler: SerializerFunctionWrapHandler
    ) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("healWindows") is None:
            data.pop("healWindows", None)
        return data


class ExperimentInfo(_Model):
    """One fault of the catalogue (or a user's experiment) as it was run."""

    name: Name
    title: str
    fault: str
    path: str | None = None
    approaches: list[Name]
    builtin: bool = True
    # The run's approaches it has no trials for, each with the reason: it does not apply to
    # that approach (the part of an approach it acts on), or that approach's app has not the
    # object it acts on. Absent when none (and in older files).
    skipped_for: dict[Name, Name] | None = None

    @model_serializer(mode="wrap")
    def _skipped_for_when_any(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if not data.get("skippedFor"):
            data.pop("skippedFor", None)
        return data


class ObjectUids(_Open):
    """UIDs of the WebApp's objects at one instant; None when the object did not exist."""

    deployment: str | None = None
    service: str | None = None
    replicaset: str | None = None
    pods: list[str] = Field(default_factory=list)


class FaultSeen(_Model):
    """How and when the judge first saw the fault (a heal counts only after this)."""

    how: FaultSeenHow
    # Seconds after the injection instant; 0 when the fault was seen before it (an event
    # received while the injection call was still returning).
    at_seconds: Seconds
    detail: str = ""


class Flap(_Model):
    """The desired state held for a while after the fault, then drifted away again."""

    healed_at_seconds: Seconds
    drifted_at_seconds: Seconds
    detail: str = ""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        if self.drifted_at_seconds < self.healed_at_seconds:
            raise ValueError("driftedAtSeconds must not be before healedAtSeconds")
        return self


class CrossCheck(_Model):
    """The periodic full re-reads that cross-check a watch, and where they disagreed."""

    reads: int = Field(ge=0)
    disagreements: list[str] = Field(default_factory=list)


class Evidence(_Open):
    """What was observed around the fault; every key is optional (error trials have few)."""

    target: str | None = None
    field: str | None = None
    before: Any = None
    during: Any = None
    after: Any = None
    uids_before: ObjectUids | None = None
    uids_after: ObjectUids | None = None
    recreated: list[str] = Field(default_factory=list)
    ready_pods: int | None = Field(default=None, ge=0)
    desired_replicas: int | None = Field(default=None, ge=0)
    mismatches_at_end: list[str] = Field(default_factory=list)
    detected_by: str | None = None
    # Who wrote the settled heal: the field managers of the restoring writes (optional, added
    # within schema 3; `compare.results.writers`). Kubernetes' own controllers
    # (kube-controller-manager) heal some faults whatever deploys the app.
    healed_by: list[Name] = Field(default_factory=list)
    # schemaVersion 2: how the fault was seen, flaps, chaostoolkit's verdict, the cross-check.
    fault_seen: FaultSeen | None = None
    flaps: list[Flap] = Field(default_factory=list)
    chaos_verdict: str | None = None
    chaos_agrees: bool | None = Field(default=None, strict=True)
    cross_check: CrossCheck | None = None
    settle_seconds: Seconds | None = None

    @model_serializer(mode="wrap")
    def _only_recorded(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # Write back only what was recorded: an error trial's `{}` stays `{}`, and a missing
        # `before` is not turned into an observed null. A default list filled in place
        # (`evidence.recreated.append(...)`) is not "set" for pydantic, so values count too.
        data: dict[str, Any] = handler(self)
        keep = {to_camel(name) for name in self.model_fields_set} | set(self.model_extra or {})
        return {k: v for k, v in data.items() if k in keep or v not in (None, [])}


def chaos_agrees(status: TrialStatus, chaos_verdict: str | None) -> bool | None:
    """Whether chaostoolkit's experiment verdict agrees with the trial's status.

    healed <-> completed, not-healed <-> deviated or failed, no-fault <-> completed (the steady
    state never broke). None when there is nothing to compare: no verdict, or an error trial.
    """
    if chaos_verdict is None or status == "error":
        return None
    if status == "not-healed":
        return chaos_verdict in ("deviated", "failed")
    return chaos_verdict == "completed"


class TrialResult(_Model):
    """One injection of one fault into one approach's WebApp, and its outcome."""

    experiment: Name
    approach: Name
    trial: int = Field(ge=1)
    namespace: str | None = None
    status: TrialStatus
    # The settled heal: from the injection instant to the start of the healed stretch that
    # then held for the settle period.
    time_to_heal_seconds: Seconds | None = None
    # The first moment the desired state held after the fault was seen (it may not have held).
    time_to_first_heal_seconds: Seconds | None = None
    time_to_detect_seconds: Seconds | None = None
    injected_at: AwareDatetime | None = None
    heal_window_seconds: float = Field(gt=0)
    # The polling interval the times are precise to; None when the run watched (events are
    # timed on receipt) or for error trials.
    poll_resolution_seconds: float | None = Field(default=None, gt=0)
    evidence: Evidence = Field(default_factory=Evidence)
    error: str | None = None
    journal: str | None = None
    # The embedded cluster the trial ran on when not the run's (its fault cluster: the
    # cluster-wide faults' trials; a trial cluster: a trial of an app whose trials cannot
    # share a cluster); absent otherwise.
    cluster: str | None = None

    @model_serializer(mode="wrap")
    def _cluster_only_elsewhere(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        if data.get("cluster") is None:
            data.pop("cluster", None)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        # Reports and policies read time-to-heal as "healed, and this fast": the two must agree.
        if self.status == "healed" and self.time_to_heal_seconds is None:
            raise ValueError("a healed trial needs timeToHealSeconds")
        if self.status != "healed" and self.time_to_heal_seconds is not None:
            raise ValueError(f"timeToHealSeconds must be null when status is {self.status!r}")
        first = self.time_to_first_heal_seconds
        if first is not None:
            if self.status in ("no-fault", "error"):
                raise ValueError(
                    f"timeToFirstHealSeconds must be null when status is {self.status!r}"
                    " (no heal can be seen)"
                )
            settled = self.time_to_heal_seconds
            if settled is not None and first > settled:
                raise ValueError(
                    f"timeToFirstHealSeconds ({first:g}) is after timeToHealSeconds"
                    f" ({settled:g}): the first heal cannot follow the settled one"
                )
        if self.evidence.healed_by and self.status != "healed":
            raise ValueError(f"evidence.healedBy must be empty when status is {self.status!r}")
        if self.status == "error" and not self.error:
            raise ValueError("a trial with status 'error' needs an error message")
        return self

    @field_serializer("injected_at")
    def _iso(self, value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    @property
    def key(self) -> tuple[str, str, int]:
        return (self.experiment, self.approach, self.trial)

    @property
    def label(self) -> str:
        """`fault/approach trial N`, for messages."""
        return f"{self.experiment}/{self.approach} trial {self.trial}"

    @property
    def flapped(self) -> bool:
        """The desired state came back and went again at least once before the end."""
        return bool(self.evidence.flaps)

    @property
    def chaos_disagrees(self) -> bool:
        """chaostoolkit's verdict was recorded as disagreeing with ours (`chaosAgrees: false`)."""
        return self.evidence.chaos_agrees is False


class RunResults(_Model):
    """A whole run: where, what, with which settings, and every trial's outcome."""

    schema_version: Literal[4] = SCHEMA_VERSION
    run_id: Name
    started_at: AwareDatetime
    finished_at: AwareDatetime | None = None
    complete: bool
    tool_version: str
    cluster: ClusterInfo
    app: AppInfo
    settings: RunSettings
    experiments: list[ExperimentInfo]
    trials: list[TrialResult]
    # Only with `--target` (absent from the file otherwise): the target, and the experiments
    # left out because the app has not what they act on (a Service, a Deployment).
    target: TargetInfo | None = None
    skipped: list[SkippedExperiment] | None = None
    # Only in a run that stopped in its preflight, before any trial (absent otherwise): why,
    # the one line the run ended with. Such a run has no trial and is not complete.
    preflight_error: str | None = Field(default=None, min_length=1)
    # Only when the preflight left arms out of the run (absent otherwise): each arm's finding.
    # The run went on with the others (`settings.approaches` holds those).
    preflight_findings: list[PreflightFinding] | None = None
    # How many clusters the run's trials ran on: its own and each sibling one ran on (the
    # fault cluster, the trial clusters); absent in a run that stopped before its trials and
    # in files written before version 4.
    clusters_used: int | None = Field(default=None, ge=1)

    @model_serializer(mode="wrap")
    def _target_only_with_target(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        for key in ("target", "skipped", "preflightError", "preflightFindings", "clustersUsed"):
            if data.get(key) is None:
                data.pop(key, None)
        return data

    @model_validator(mode="after")
    def _consistent(self) -> Self:
        names = [e.name for e in self.experiments]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            raise ValueError(f"experiment {duplicate!r} is listed twice in experiments")
        seen: set[tuple[str, str, int]] = set()
        for trial in self.trials:
            if trial.experiment not in names:
                raise ValueError(
                    f"{trial.label}: experiment {trial.experiment!r} is not in experiments"
                )
            if trial.key in seen:
                raise ValueError(f"{trial.label} appears twice in trials")
            seen.add(trial.key)
        return self

    @field_serializer("started_at", "finished_at")
    def _iso(self, value: datetime | None) -> str | None:
        return value.isoformat() if value is not None else None

    def to_json(self) -> dict[str, Any]:
        """The JSON document (camelCase keys, schemaVersion 4), ready for json.dumps."""
        return self.model_dump(mode="json", by_alias=True)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunResults:
        """Validate a parsed results.json, upgrading a schemaVersion 1, 2 or 3 document first.

        Raises pydantic.ValidationError, or migrate.MigrationError for an older document that
        uses what only a later version has (load_results turns both into one line).
        """
        return cls.model_validate(upgrade(data))

    def experiment(self, name: str) -> ExperimentInfo | None:
        return next((e for e in self.experiments if e.name == name), None)

    def trials_of(self, experiment: str, approach: str) -> list[TrialResult]:
        """The trials of one (fault, approach) cell, in trial order."""
        found = [t for t in self.trials if t.experiment == experiment and t.approach == approach]
        return sorted(found, key=lambda t: t.trial)
