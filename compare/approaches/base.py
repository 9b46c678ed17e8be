"""The one interface every approach implements (`Approach`), and what its methods return.

An approach is a way of keeping an app in its desired state: a Helm release, an operator, Helm
under a GitOps controller. The run engine, the CLI, the probes, `compare status`, the policies
and the experiment catalogue know approaches only through this interface and the registry
(`compare.approaches.REGISTRY`); everything particular to one approach lives in its module.
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.chart_target import render_target
from compare.deploy.charts import DEFAULT_NAMESPACE, check_release_name
from compare.errors import EXIT_USAGE, CompareError
from compare.inputfile import check_plain, load_yaml
from compare.judge import DesiredObjects
from compare.kube import terminating
from compare.target import ArmKey, ArmKind, HelmInstall, Operator, Target
from compare.target import builtin_target as target_with
from compare.webapp import WebApp, load_webapp

if TYPE_CHECKING:
    from compare.deploy.rows import DeployedApp


class Fault(Protocol):
    """What `applies_to` reads of an experiment (`compare.run.experiments.ExperimentSpec`)."""

    @property
    def approaches(self) -> tuple[str, ...]: ...


class LocalControllers(Protocol):
    """An approach's controllers run as local processes beside the cluster, one set per
    cluster (`compare.deploy.processes.Controllers`): started if not running, stopped
    (SIGTERM, or SIGKILL with `kill`), and forgotten with their state when the cluster goes."""

    def start(self, cluster: ClusterTarget) -> object: ...

    def stop(self, cluster: ClusterTarget, *, kill: bool = False) -> object: ...

    def forget(self, cluster: ClusterTarget) -> None: ...


@dataclass(frozen=True)
class Detector:
    """The Events that time detection: per kind of the object they are posted on, the reasons
    that announce a correction; on one of the `custom` kinds (a target operator's resources)
    any reason does."""

    kinds: Mapping[str, tuple[str, ...]]
    custom: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cadence:
    """How long an approach may leave a fault alone, by its own schedule, before it first acts
    on it: the worst case of its timer (Flux's interval plus its jitter), not the time a
    correction then takes. Approaches that react to a watch event have none."""

    seconds: float
    # What it is made of, for results.json and the report ("HelmRelease interval 5 s + 5 %
    # jitter").
    what: str


def trial_window(heal_window: float, cadence: Cadence | None, *, exact: bool = False) -> float:
    """The heal window of an approach's trials: the user's `--heal-window` (the time a heal
    may take once the approach can act) plus the approach's cadence (the time before it can),
    so an approach that only looks every N seconds is not judged on where in its cycle the
    fault happened to land. `exact` (`--exact-heal-window`): the user's window as it is."""
    if exact or cadence is None:
        return heal_window
    # Rounded to the millisecond: the window is shown and recorded, not computed further.
    return round(heal_window + cadence.seconds, 3)


@dataclass(frozen=True)
class TargetDeploy:
    """What a deploy of a target file's arm leaves for the trial: the desired objects, the
    object whose Events announce a correction, and whether the objects are an operator's
    baseline of owned objects (not a rendered manifest). `headline` and `notes` say what was
    deployed, for `compare deploy NAME --target` (its time is added to the headline); a trial
    drops its `warnings` (the run's preflight said them once)."""

    desired: DesiredObjects
    events_on: str | None = None
    owned: bool = False
    headline: str = ""
    notes: tuple[str, ...] = ()
    # What the deploy found worth a warning but not a stop (an operator's baseline keeping
    # another field manager's label).
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True)
class CommandOption:
    """An option of an approach's `compare deploy NAME` or `compare undeploy NAME` beyond the
    ones every approach's takes (`--app`, `-n`, `--timeout`, `--target`, ...): the CLI makes a
    flag of it (`compare.cli.deploy_cmd`) and hands its value to the approach's command hooks
    under `name` (and to `configured`: an option named after a setting sets it)."""

    name: str
    flags: tuple[str, ...]
    # str, float, bool (a flag) or Path (a file); a str or Path option's default is None.
    kind: type
    default: Any = None
    help: str = ""
    # A float's range, refused as the command line is parsed.
    bounds: tuple[float, float] | None = None
    # Also taken with --target (else naming both is a usage error).
    with_target: bool = False
    # On an undeploy: when given, it names what to remove (the --app file is not read).
    names_app: bool = False


# The chart options a charted approach's commands may declare; the default `command_target`
# reads them. Chart values are a few KiB: a bigger file is a mistake (a wrong path).
MAX_VALUES_BYTES = 1024 * 1024
RELEASE = CommandOption(
    "release", ("--release",), str, help="Helm release name (default: the WebApp's metadata.name)."
)
VALUES = CommandOption(
    "values",
    ("--values", "-f"),
    Path,
    help="Extra chart values (YAML): probes, security contexts, ... not the WebApp's own.",
)
# On an undeploy, a release named removes it whatever --app says.
RELEASE_TO_REMOVE = CommandOption(
    "release",
    ("--release",),
    str,
    help="Helm release name (default: metadata.name of --app).",
    names_app=True,
)


def load_values(path: Path | None) -> dict[str, Any] | None:
    """A `--values` file: a mapping of chart values (None: no file)."""
    if path is None:
        return None
    data = load_yaml(path, limit=MAX_VALUES_BYTES)
    check_plain(data, str(path))  # Helm reads values as JSON: no bytes, no timestamps
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CompareError(f"{path}: expected a mapping of chart values, got {type(data).__name__}")
    return data


def builtin_target(
    webapp: WebApp,
    source: Path | None = None,
    *,
    release: str | None = None,
    extra_values: Mapping[str, Any] | None = None,
) -> Target:
    """The built-in WebApp as a target with an arm for every registered approach
    (`compare.target.builtin_target` with the registry's keys)."""
    # The registry imports every approach, and so this module: read when called.
    from compare.approaches import target_arms

    arms = target_arms()
    return target_with(webapp, source, arms=arms, release=release, extra_values=extra_values)


def webapp_notes(target: Target) -> tuple[str, ...]:
    """What the built-in target's WebApp runs, for `compare deploy NAME`'s summary (none for a
    target file: its objects are counted by kind)."""
    lines: list[str] = []
    for webapp in target.webapps if target.own_chart else ():
        name, spec = webapp.name, webapp.spec
        lines.append(f"Deployment {name}: {spec.replicas}/{spec.replicas} ready, {spec.image}")
        lines.append(f"Service    {name}: ClusterIP, port {spec.port} -> http")
        if spec.env:
            lines.append("env:       " + ", ".join(f"{v.name}={v.value}" for v in spec.env))
    return tuple(lines)


def describe_settings(name: str, settings: Mapping[str, Any]) -> str:
    """An approach's recorded settings as a report shows them when the approach says nothing
    of its own (or is not registered here): `name key=value, key=value`."""
    return f"{name} " + ", ".join(f"{key}={_setting(value)}" for key, value in settings.items())


def _setting(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class Approach(ABC):
    """One approach. Instances are immutable; per-approach settings are fields of the
    subclass (Flux's interval) and `configured` returns a copy with some of them changed.

    Subclasses set `name` (a DNS label: namespaces, results.json, `compare deploy NAME`, its
    key in a target file), `short` (its part of a trial namespace's name), `label` (`compare
    status`'s line when none is deployed), `arm_kind` and `arm_description` (its key in a
    target file: `arm_key`), and implement the abstract methods; the others have defaults that
    fit an approach with nothing shared to start and no Events to read. Every app, the
    built-in WebApp included, is a target (`builtin_target`, with an arm for every approach):
    an approach deploys, desires and removes it through its target methods alone.
    """

    name: ClassVar[str]
    short: ClassVar[str]
    label: ClassVar[str]
    # What its key in a target file holds: a chart (installed per trial namespace, its
    # manifest telling which faults apply before anything is deployed) or an operator; and
    # the key's description in docs/target.schema.json.
    arm_kind: ClassVar[ArmKind]
    arm_description: ClassVar[str]
    # Whether a run without `--approach` includes it (an approach whose controllers are heavy
    # may be one a user asks for by name).
    default: ClassVar[bool] = True
    # Evidence targets of faults on a part of this approach itself rather than of the app
    # (the operator's process), each with what it is (a run that cannot act on it says
    # "acts on <what>"): an experiment tracking one applies only to the approaches that
    # declare it (`compare.run.experiments`); the other targets are the app's objects and
    # pods, which every approach deploys.
    fault_targets: ClassVar[Mapping[str, str]] = {}

    @classmethod
    def arm_key(cls) -> ArmKey:
        """Its key in a target file, as the target package takes it (`compare.target`)."""
        return ArmKey(cls.name, cls.arm_kind, cls.arm_description)

    # Whether it can leave objects out of a chart's install and desired state (a post-render
    # filter): what a chart arm's `dropUnservedWebhooks` needs.
    post_renders: ClassVar[bool] = False
    # Whether it can install a chart without running its Helm hooks: what a chart arm's
    # `disableHooks` needs.
    disables_hooks: ClassVar[bool] = False

    @property
    def charted(self) -> bool:
        """Whether a target file's arm of this approach is a chart."""
        return self.arm_kind == "chart"

    # --- settings -------------------------------------------------------------------------
    def configured(self, **settings: Any) -> Self:
        """A copy with the settings this approach has (unknown names are for other
        approaches and are ignored)."""
        mine = {k: v for k, v in settings.items() if k in self.settings()}
        return replace(self, **mine) if mine else self

    def settings(self) -> dict[str, Any]:
        """This approach's settings by name (none by default)."""
        return {}

    def run_settings(self) -> dict[str, Any]:
        """What results.json records of this approach's settings
        (`settings.approachSettings[name]`): JSON values under camelCase names of its own
        choosing (none by default: nothing is written for it)."""
        return {}

    def describe_settings(self, settings: Mapping[str, Any]) -> str:
        """How reports show `settings` (what `run_settings` recorded, read back from a
        results.json): by default `name key=value, ...`."""
        return describe_settings(self.name, settings)

    def check_settings(self, heal_window: float) -> None:
        """Raise a CompareError when the settings cannot measure a heal within `heal_window`
        (this approach's trial window: `trial_window` of the user's and its `cadence`)."""
        return None

    def cadence(self) -> Cadence | None:
        """The longest this approach may wait, by its own schedule, before it acts on a fault
        (None: it acts on the watch event, or its schedule is unknown). Added to the user's
        heal window for its trials (`trial_window`)."""
        return None

    # --- the shared parts -----------------------------------------------------------------
    def prepare(self, cluster: ClusterTarget) -> None:
        """Start or check what every deploy of this approach shares (controllers, an operator)."""
        return None

    def recover(self, cluster: ClusterTarget) -> None:
        """After a fault that may have stopped the shared parts: start them again if needed."""
        return None

    def shares(self, target: Target) -> bool:
        """Whether the target's arm runs on this approach's shared parts (what `prepare`
        starts per cluster, and a run starts again after a fault): by default whenever the
        target has an arm of it."""
        return self.arm(target) is not None

    def controllers(self) -> LocalControllers | None:
        """Its controllers when they run as local processes of this machine (the chaos
        faults that stop the controllers act on them; `compare cluster down` forgets them);
        None: it runs none here."""
        return None

    def target_controllers(self, target: Target) -> LocalControllers | None:
        """The local controllers the target's arm runs on, when this machine runs them (the
        faults that stop and start an approach's controllers act on these, and a run starts
        them again after a fault): by default its shared ones when the arm shares them."""
        return self.controllers() if self.shares(target) else None

    # --- what an arm applies, known without a cluster ------------------------------------
    def known_desired(self, target: Target, namespace: str) -> list[dict[str, Any]] | None:
        """The complete objects the target's arm applies in `namespace`, when they are known
        without a cluster (None: only once deployed, like an operator's children). By default:
        a chart arm rendered, as the approach applies it (`applied`)."""
        if not self.charted:
            return None
        arm = self.chart_arm(target)
        return self.applied(render_target(target, arm, namespace), arm.release, namespace)

    def applied(
        self, rendered: list[dict[str, Any]], release: str, namespace: str
    ) -> list[dict[str, Any]]:
        """A chart arm's rendered objects (hooks dropped) as this approach applies them under
        `release` in `namespace` (what it writes on every object added); as they are by
        default."""
        return rendered

    def render_finding(self, fields: Sequence[str]) -> str | None:
        """What a chart arm whose rendering differs between two renders with the same values
        (`fields`: the judged fields that differ, `compare.deploy.chart_target.render_changes`)
        means for this approach: None when it holds the rendering it installed (Helm keeps
        it as the release's manifest, and an approach that corrects drift from that manifest
        - helm-controller - holds it too), else the one line that leaves the arm out of a run
        (its controller renders the chart anew and applies each new value)."""
        return None

    # --- detection and applicability ------------------------------------------------------
    def detector(self, app_target: Target | None = None) -> Detector | None:
        """The Events that announce a correction (None: detection is not observable)."""
        return None

    def applies_to(self, fault: Fault) -> bool:
        """Whether `fault` (an experiment) has trials of this approach. By default: the
        experiment names it, or names no approach (`compare.run.experiments` resolves that to
        the registry); whether the app has the parts it acts on is the run's to decide."""
        return self.name in fault.approaches

    # --- a target file's arm (`--target`) -------------------------------------------------
    def arm(self, target: Target) -> HelmInstall | Operator | None:
        """This approach's arm of a target file: the key named after the approach."""
        return target.arms.get(self.name)

    def chart_arm(self, target: Target) -> HelmInstall:
        """The arm, a chart; a one-line error naming the key when the target has none, or
        the field when it asks for what this approach cannot do (`post_renders`,
        `disables_hooks`)."""
        install = target.chart_arm(self.name)
        if install.drop_unserved_webhooks and not self.post_renders:
            raise CompareError(
                f"{target.source}: {install.where}.dropUnservedWebhooks: the {self.name} arm"
                " cannot leave objects out of its chart (no post-render step)",
                exit_code=EXIT_USAGE,
            )
        if install.disable_hooks and not self.disables_hooks:
            raise CompareError(
                f"{target.source}: {install.where}.disableHooks: the {self.name} arm"
                " cannot install a chart without its hooks",
                exit_code=EXIT_USAGE,
            )
        return install

    @abstractmethod
    def deploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> TargetDeploy:
        """Deploy the target's arm into `namespace`, wait until its desired state holds."""

    @abstractmethod
    def undeploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float | None = None,
    ) -> bool:
        """Remove what `deploy_target` made in `namespace` (and its cluster-scoped objects),
        within `timeout` (None: the approach's own default); whether there was any."""

    def cleanup(self, cluster: ClusterTarget, target: Target, namespace: str) -> None:
        """Remove what must go before `namespace` is deleted (objects with finalizers only a
        running controller clears, cluster-scoped objects), so that deleting the namespace
        leaves nothing; by default the whole `undeploy_target`."""
        self.undeploy_target(cluster, target, namespace)

    @abstractmethod
    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        """The desired objects of the target's arm deployed in `namespace` (for the probes)."""

    def check_target(self, target: Target, namespace: str) -> None:
        """Everything of the arm that can be checked without a cluster (one line naming the
        file when it fails): by default a chart arm renders (`helm template`)."""
        if self.charted:
            render_target(target, self.chart_arm(target), namespace)

    def check_target_on(self, cluster: ClusterTarget, target: Target, namespace: str) -> None:
        """What of the arm can be checked on the cluster before anything is created (an
        operator's custom resources are of kinds it serves or its install defines)."""
        return None

    def install_target(
        self, cluster: ClusterTarget, target: Target, namespace: str, *, timeout: float
    ) -> Callable[[], None] | None:
        """What the arm needs installed once before `deploy_target` outside a run (`compare
        deploy NAME --target`: an operator); returns how to remove what it created (None:
        nothing to remove). A run does this in its preflight."""
        return None

    def target_what(self, target: Target) -> str:
        """What the arm deploys, as `compare status` names it (`helm release shop`)."""
        return f"{self.name} {target.name}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        """`compare status --target`: the arm's row, judged against its desired state (None:
        not deployed in `namespace`)."""
        return None

    # --- what is deployed (`compare status`) ----------------------------------------------
    # One path with `--target`: every app found is the arm of a target, its row `target_row`.
    @abstractmethod
    def discover(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[tuple[Target, str]]:
        """Every app deployed through this approach in `namespace` (all when None): the
        target whose arm it is (a release of the built-in chart: `builtin_release`; a WebApp:
        the built-in target with it) and the namespace it is deployed in."""

    def status(
        self,
        cluster: ClusterTarget,
        api: client.ApiClient,
        namespace: str | None,
        going: Collection[str] | None = None,
    ) -> list[DeployedApp]:
        """Every app deployed through this approach in `namespace` (all when None), judged:
        each found one's `target_row`, by namespace and name. `going`: the namespaces being
        deleted, when the caller read them already (one read for every approach)."""
        # A namespace being deleted holds nothing to judge (and a judge's dry run there is
        # refused, 403): skipped, as one that starts going while it is read.
        if going is None:
            going = terminating(api, namespace)
        found = []
        for t, ns in self.discover(cluster, api, namespace):
            if ns in going:
                continue
            try:
                found.append(self.target_row(cluster, t, ns))
            except (CompareError, client.ApiException):
                if ns not in terminating(api, ns):
                    raise
        return sorted(
            (row for row in found if row is not None), key=lambda r: (r.namespace, r.name)
        )

    # --- `compare deploy NAME` and `compare undeploy NAME` --------------------------------
    # One command each for every approach (`compare.cli.deploy_cmd`), the built-in WebApp and
    # a target file's arm alike deployed by `deploy_arm` and removed by `undeploy_arm`
    # (`compare.cli.target_cmd`); what is particular to an approach's commands is here.
    deploy_options: ClassVar[tuple[CommandOption, ...]] = ()
    undeploy_options: ClassVar[tuple[CommandOption, ...]] = ()
    # `compare run`'s options for this approach, each named after one of its settings
    # (`configured`); the flag names the approach (`--flux-interval`).
    run_options: ClassVar[tuple[CommandOption, ...]] = ()
    # `--timeout`'s default, seconds.
    deploy_timeout: ClassVar[float] = DEPLOY_TIMEOUT_S
    undeploy_timeout: ClassVar[float] = DEPLOY_TIMEOUT_S
    # The commands' help (its first sentence is their line in `compare deploy --help`); empty:
    # a generic one.
    deploy_help: ClassVar[str] = ""
    undeploy_help: ClassVar[str] = ""

    def check_options(self, options: Mapping[str, Any]) -> None:
        """The command's own options checked alone, before anything is read (one line naming
        the flag): options that contradict each other, a malformed value."""
        return None

    def command_target(
        self, webapp: WebApp | None, source: Path | None, options: Mapping[str, Any]
    ) -> Target:
        """The built-in target a command deploys or removes: `webapp` (read from `source`),
        or, on an undeploy, the app an option names (`names_app`; `webapp` is None then),
        shaped by the options; what of them can be checked without a cluster is checked (one
        line naming the flag or file). By default: released as `--release` (`RELEASE`) with
        the extra values of `--values` (`VALUES`) when the approach takes them, checked by
        `helm template` (a bad value is a line naming the values file); a release named on an
        undeploy is removed whatever the WebApp (examples/webapp.yaml stands in for it)."""
        release, values = options.get("release"), options.get("values")
        if release is not None:
            check_release_name(release)
        elif webapp is None:
            raise CompareError(f"{self.name}: no option names an app to remove")
        extra = load_values(values)
        try:
            target = builtin_target(
                webapp or load_webapp(None), source, release=release, extra_values=extra
            )
            if values is not None:
                render_target(target, self.chart_arm(target), DEFAULT_NAMESPACE)
        except CompareError as exc:
            if values is None or not exc.message.startswith("values: "):
                raise
            raise CompareError(f"{values}: {exc.message.removeprefix('values: ')}") from exc
        return target

    def command_install(
        self, cluster: ClusterTarget, target: Target, options: Mapping[str, Any]
    ) -> tuple[str, ...]:
        """What `compare deploy NAME` starts or installs before the arm (`deploy_arm`), and
        the lines that say so: by default `prepare`, said by nothing."""
        self.prepare(cluster)
        return ()

    def after_undeploy(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        options: Mapping[str, Any],
        *,
        builtin: bool,
    ) -> tuple[str, ...]:
        """What `compare undeploy NAME` does once the arm is gone (`builtin`: the built-in
        WebApp's, else a target file's), as the options ask: stop what no app needs any more;
        the lines that say so."""
        return ()
