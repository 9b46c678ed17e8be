"""The small interfaces an approach (`compare.approaches.base.Approach`) is composed of, and
what their methods return: its arm of a target (`Arms`), what the arm applies, known without a
cluster (`Rendering`), what deploys, desires and removes it (`Deploys`), what runs its
controllers (`RunsControllers`), what observes it (`Observes`: cadence, detector, discovery,
status row), its settings (`Settings`). Callers type against the one they use. Nothing here
imports an approach's package or a deploy mechanism (tests/architecture).
"""

from __future__ import annotations

import json
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, Self

from kubernetes import client

from compare.cluster import ClusterTarget
from compare.errors import EXIT_USAGE, CompareError
from compare.judge import DesiredObjects
from compare.kube import terminating
from compare.target import ArmKey, ArmKind, HelmInstall, Operator, Target

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
    """What a deploy of a target's arm leaves for the trial: the desired objects, the object
    whose Events announce a correction, and whether the objects are an operator's baseline of
    owned objects (not a rendered manifest). The facts of what was deployed are data; the CLI
    makes `compare deploy NAME`'s lines of them (`compare.cli.target_cmd`). A trial drops its
    `warnings` (the run's preflight said them once)."""

    desired: DesiredObjects
    events_on: str | None = None
    owned: bool = False
    # What the arm was made from, by name (`("chart", "oci://..."), ("interval", "5s")`).
    facts: tuple[tuple[str, str], ...] = ()
    # The states it reached beyond its desired state (`("Synced", "Healthy")`).
    reached: tuple[str, ...] = ()
    # Further facts, by name (`("stored", "Secret ns/name")`).
    details: tuple[tuple[str, str], ...] = ()
    # What the deploy found worth a warning but not a stop (an operator's baseline keeping
    # another field manager's label).
    warnings: tuple[str, ...] = ()


class Arms:
    """An approach's arm of a target: its key in a target file, found in a target."""

    name: ClassVar[str]
    # What its key in a target file holds: a chart (installed per trial namespace, its
    # manifest telling which faults apply before anything is deployed) or an operator; and
    # the key's description in docs/target.schema.json.
    arm_kind: ClassVar[ArmKind]
    arm_description: ClassVar[str]
    # Whether it can leave objects out of a chart's install and desired state (a post-render
    # filter): what a chart arm's `dropUnservedWebhooks` and `dropUnservedAPIServices` need.
    post_renders: ClassVar[bool] = False
    # Whether it can install a chart without running its Helm hooks: what a chart arm's
    # `disableHooks` needs.
    disables_hooks: ClassVar[bool] = False

    @classmethod
    def arm_key(cls) -> ArmKey:
        """Its key in a target file, as the target package takes it (`compare.target`)."""
        return ArmKey(cls.name, cls.arm_kind, cls.arm_description)

    @property
    def charted(self) -> bool:
        """Whether a target file's arm of this approach is a chart."""
        return self.arm_kind == "chart"

    def arm(self, target: Target) -> HelmInstall | Operator | None:
        """This approach's arm of a target file: the key named after the approach."""
        return target.arms.get(self.name)

    def chart_arm(self, target: Target) -> HelmInstall:
        """The arm, a chart; a one-line error naming the key when the target has none, or
        the field when it asks for what this approach cannot do (`post_renders`,
        `disables_hooks`)."""
        install = target.chart_arm(self.name)
        if install.drops and not self.post_renders:
            raise CompareError(
                f"{target.source}: {install.where}.{install.drops[0]}: the {self.name} arm"
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


class Rendering:
    """What an arm applies and whether it deploys, known without a cluster (`charted.Charted`)."""

    def known_desired(self, target: Target, namespace: str) -> list[dict[str, Any]] | None:
        """The complete objects the target's arm applies in `namespace`, when they are known
        without a cluster (None: only once deployed, like an operator's children)."""
        return None

    def applied(
        self, rendered: list[dict[str, Any]], release: str, namespace: str
    ) -> list[dict[str, Any]]:
        """A chart arm's rendered objects (hooks dropped) as this approach applies them under
        `release` in `namespace` (what it writes on every object added); as they are by
        default."""
        return rendered

    def render_finding(self, fields: Sequence[str]) -> str | None:
        """What a chart arm whose renderings with the same values differ in `fields` means for
        this approach: None when it holds the rendering it installed (Helm's release manifest),
        else the one line that leaves the arm out of a run (its controller renders anew)."""
        return None

    def check_target(self, target: Target, namespace: str) -> None:
        """Everything of the arm that can be checked without a cluster (one line naming the
        file when it fails); nothing by default."""
        return None

    def check_target_on(self, cluster: ClusterTarget, target: Target, namespace: str) -> None:
        """What of the arm can be checked on the cluster before anything is created (an
        operator's custom resources are of kinds it serves or its install defines)."""
        return None


class Deploys(ABC):
    """What deploys, desires and removes a target's arm in a namespace (`approaches.arms`)."""

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

    def install_target(
        self, cluster: ClusterTarget, target: Target, namespace: str, *, timeout: float
    ) -> Callable[[], None] | None:
        """What the arm needs installed once before `deploy_target` outside a run (`compare
        deploy NAME --target`: an operator); returns how to remove what it created (None:
        nothing to remove). A run does this in its preflight."""
        return None


class RunsControllers:
    """What runs an approach's controllers: what its deploys share, its local processes."""

    name: ClassVar[str]

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
        return target.arms.get(self.name) is not None

    def controllers(self) -> LocalControllers | None:
        """Its controllers when they run as local processes of this machine (the faults that
        stop controllers act on them; `compare cluster down` forgets them), else None."""
        return None

    def target_controllers(self, target: Target) -> LocalControllers | None:
        """The local controllers the target's arm runs on, when this machine runs them (the
        faults that stop and start an approach's controllers act on these, and a run starts
        them again after a fault): by default its shared ones when the arm shares them."""
        return self.controllers() if self.shares(target) else None


class Observes(ABC):
    """What observes an approach: its cadence, detector, and its apps (`compare status`)."""

    name: ClassVar[str]

    def cadence(self) -> Cadence | None:
        """The longest this approach may wait, by its own schedule, before it acts on a fault
        (None: it acts on the watch event, or its schedule is unknown). Added to the user's
        heal window for its trials (`trial_window`)."""
        return None

    def detector(self, app_target: Target | None = None) -> Detector | None:
        """The Events that announce a correction (None: detection is not observable)."""
        return None

    @abstractmethod
    def discover(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[tuple[Target, str]]:
        """Every app deployed through this approach in `namespace` (all when None): the
        target whose arm it is (a release of the built-in chart: `builtin_release`; a WebApp:
        the built-in target with it) and the namespace it is deployed in."""

    def target_what(self, target: Target) -> str:
        """What the arm deploys, as `compare status` names it (`helm release shop`)."""
        return f"{self.name} {target.name}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        """`compare status --target`: the arm's row, judged against its desired state (None:
        not deployed in `namespace`)."""
        return None

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


class Settings:
    """An approach's settings: fields of the instance (Flux's interval)."""

    name: ClassVar[str]

    def configured(self, **settings: Any) -> Self:
        """A copy with the settings this approach has (unknown names are for other
        approaches and are ignored)."""
        mine = {k: v for k, v in settings.items() if k in self.settings()}
        return replace(self, **mine) if mine else self  # type: ignore[type-var]

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


def describe_settings(name: str, settings: Mapping[str, Any]) -> str:
    """An approach's recorded settings as a report shows them when the approach says nothing
    of its own (or is not registered here): `name key=value, key=value`."""
    return f"{name} " + ", ".join(f"{key}={_setting(value)}" for key, value in settings.items())


def _setting(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}"
    return value if isinstance(value, str) else json.dumps(value)
