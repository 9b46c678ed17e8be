"""The app under test in a run: a target (`compare.target`), behind one interface.

The run, its trials, its planning and its cleanup know the app only through `App`: which
approaches it has, what must happen once before the trials (`preflight`) and after them
(`finish`), how an approach deploys it into a trial's namespace (what the judge then holds it
to, and the parts the faults act on), what goes before that namespace is deleted, which Events
time a correction, and how results.json names it. Every app is a target: a target file's
(`--target FILE`) or the built-in one (`--app FILE`, `compare.target.builtin_target`); what
differs is data of the target, never a branch here.

- Its arms are checked without a cluster (`check`: every chart renders, each arm's parts
  deciding which faults apply to that arm's approach). A target file (`Target.from_file`)
  has its arms deployed once before the trials: a chart that cannot reach its desired state,
  an operator that never gets ready, stop the run there, and what the operator's resources
  own is learned; the built-in target's are the toolkit's own and need none.
- The approaches' shared parts (the Flux and Argo CD controllers, the toolkit's operator) are
  started by the run and restarted after a fault that stops them; an operator the target
  installs itself (any install form but `toolkit`) is installed (or checked) by `preflight`,
  removed by `finish`, never restarted.
- Its parts are what its charts render and what its operator's resources own (the toolkit's
  operator: the built-in chart's rendering of its WebApps).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes import client

from compare import approaches as registry
from compare.approaches import Approach, contract
from compare.approaches.arms import ArmDeployed, deploy_arm, install_namespace, preflight_arm
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import render_target
from compare.errors import EXIT_USAGE, CompareError
from compare.judge import DesiredObjects
from compare.judge.desired import elsewhere
from compare.judge.parts import PartNotFound
from compare.results import AppInfo, TargetInfo
from compare.run.owners import owner_annotations, preflight_labels
from compare.run.preflight import new_chart_crds, remove_crds
from compare.run.workload import OWNED, Workload, workload_of
from compare.target import Target

# The namespace a target's chart arms are rendered into before any trial: like a trial's.
TRIAL_NAMESPACE = "cmp-helm-target"


@dataclass(frozen=True)
class Deployed:
    """An app deployed by one approach in a trial's namespace: what the judge holds it to,
    the parts the faults act on, and the object whose Events announce a correction."""

    desired: DesiredObjects
    workload: Workload
    events_on: str


@dataclass(frozen=True)
class Step:
    """One step of a preflight: what it is doing (a progress line) and the doing, which
    returns the line that says what it found."""

    doing: str
    run: Callable[[], str]


@dataclass
class App:
    """The app under test (see the module's docstring). `chart_workload` stands for the parts
    of every chart arm (given directly by tests that plan without a cluster; else each chart
    arm's own rendering's, `parts`); `operator_workload` is what its operator's resources
    own (set by `preflight`, or given by tests)."""

    target: Target
    chart_workload: Workload | None = None
    operator_workload: Workload | None = None
    # What the preflight installed (removed by `finish`): how to undo the arms' installs (an
    # operator's), the chart CRDs.
    _installed: list[Callable[[], None]] = field(default_factory=list)
    _crds: list[str] = field(default_factory=list)
    # Each chart arm's parts, by approach (`parts`).
    _arm_parts: dict[str, Workload] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """Its name (results.json, the experiments' `${webapp_name}`, Events when the
        approach names no other object)."""
        return self.target.name

    @property
    def source(self) -> Path:
        """The file the probes read to judge a trial."""
        return self.target.source

    @property
    def per_cluster(self) -> bool:
        """Whether its approaches' shared parts can be started on a second cluster by
        `prepare` alone (the run's fault cluster, `compare.run.sibling`): nothing is
        installed once by a preflight."""
        return not self.target.from_file

    def per_cluster_arm(self, approach: contract.Arms) -> bool:
        """Whether the approach's trials of it can run on another cluster readied by `prepare`
        alone (a sibling, `compare.run.spread`): a chart arm needs nothing its preflight
        installed (Helm, Flux and Argo CD install a chart's CRDs with it); an operator a
        target installs itself is installed once, on the run's cluster."""
        return self.per_cluster or approach.charted

    def default_approaches(self) -> tuple[str, ...]:
        """The approaches a run without `--approach` uses: the arms it has (of the default
        approaches only, for the built-in target: it has an arm for every approach)."""
        return tuple(
            a.name
            for a in registry.REGISTRY
            if a.arm(self.target) is not None and (a.default or self.target.from_file)
        )

    def prepare(self, approach: Approach, cluster: ClusterTarget) -> None:
        """Before the trials: the approach's shared parts running."""
        if approach.shares(self.target):
            approach.prepare(cluster)

    def recover(self, approach: contract.RunsControllers, cluster: ClusterTarget) -> None:
        """After a fault that may have stopped the approach's shared parts, or the local
        controllers the toolkit runs for this target (an operator's `install.process`):
        running again."""
        if approach.shares(self.target):
            approach.recover(cluster)
        elif (controllers := approach.target_controllers(self.target)) is not None:
            controllers.start(cluster)

    def check(self, approaches: Sequence[str]) -> None:
        """Everything that can be checked without a cluster, for these approaches."""
        # Every arm asked for is there; every chart arm renders (`helm template`) into a
        # namespace like a trial's, its parts deciding which faults apply to its approach;
        # every other arm passes its approach's own check (an operator's install builds).
        for name in approaches:
            if registry.get(name).arm(self.target) is None:
                raise CompareError(
                    f"{self.target.source}: {name}: not given (this target has no {name} key)",
                    exit_code=EXIT_USAGE,
                )
        for name in approaches:
            if registry.get(name).charted:
                self.parts(name)
        for name in approaches:
            approach = registry.get(name)
            if not approach.charted:
                approach.check_target(self.target, install_namespace(self.target))

    def _rendered(self, approach: str) -> list[dict[str, Any]]:
        arm = registry.get(approach).chart_arm(self.target)
        return render_target(self.target, arm, TRIAL_NAMESPACE)

    def preflight(
        self,
        cluster: ClusterTarget,
        approaches: Mapping[str, Approach],
        *,
        timeout: float,
        warn: Callable[[str], None] | None = None,
    ) -> list[Step]:
        """What must happen once before the trials (each step run in order by the caller;
        `warn` gets what a step finds worth a warning but not a stop)."""
        if not self.target.from_file:
            return []
        # What can be checked on the cluster before anything is created, for every arm
        # before the first is deployed: an operator that cannot run on this cluster stops the
        # run in seconds, not after the charts' arms were deployed.
        for approach in approaches.values():
            approach.check_target_on(cluster, self.target, install_namespace(self.target))
        # A chart's crds/ are installed by Helm once and never removed: the run removes the
        # ones it installed (`finish`), whatever happens.
        self._crds = new_chart_crds(cluster, self.target, tuple(approaches))
        # Each arm deployed once, the one way every arm is (`preflight_arm`): the charts
        # first, an operator the target installs itself last.
        order = sorted(approaches.values(), key=lambda a: not a.charted)
        return [Step(self._doing(a), self._step(cluster, a, timeout, warn)) for a in order]

    def _doing(self, approach: Approach) -> str:
        if approach.charted:
            return f"preflight: deploying the {approach.name} arm once"
        return "preflight: installing the target's operator, deploying it once"

    def _step(
        self,
        cluster: ClusterTarget,
        approach: Approach,
        timeout: float,
        warn: Callable[[str], None] | None,
    ) -> Callable[[], str]:
        def run() -> str:
            # What its deploy keeps of other field managers' writes is said here, once.
            # Its namespace owned like a trial's (`compare.run.owners`), under the process's
            # preflight id: the run's own id is made after the preflight.
            done = preflight_arm(approach, cluster, self.target, timeout=timeout,
                                 warn=warn or (lambda _: None), labels=preflight_labels(),
                                 annotations=owner_annotations())  # fmt: skip
            if done.undo_install is not None:
                self._installed.append(done.undo_install)
            if approach.charted:
                return f"preflight: the {approach.name} arm reached its desired state"
            owned = self._parts(done)
            self.operator_workload = owned
            parts = [
                f"{ref.kind} {ref.name}"
                for need in ("workload", "service")
                if (ref := owned.ref(need)) is not None
            ]
            return "preflight: the target's custom resources own " + (
                " and ".join(parts) or "no workload or Service (the faults on them are left out)"
            )

        return run

    def finish(self, cluster: ClusterTarget, *, keep: bool) -> list[str]:
        """After the run (whatever happened): remove what `preflight` installed; what could
        not be removed, one line each."""
        left: list[str] = []
        undo, self._installed = self._installed, []
        for step in [] if keep else undo:
            try:
                step()
            except Exception as exc:
                left.append(f"the target's operator install: {exc}")
        crds, self._crds = self._crds, []
        return left + remove_crds(cluster, crds)

    def parts(self, approach: str) -> Workload | None:
        """The app's parts as `approach` deploys it: what decides which faults apply to that
        approach (None: not known before its trials). A chart arm's are its own rendering's
        (each arm its chart and values); an operator's what its custom resources own: known
        once its preflight deployed them, or, when its approach knows them without a
        cluster (the toolkit's operator: the built-in chart's rendering of its WebApp), from
        that. `chart_workload`, when given, stands for every chart arm's."""
        chosen = registry.get(approach)
        if chosen.charted:
            if self.chart_workload is not None:
                return self.chart_workload
            if approach not in self._arm_parts:
                self._arm_parts[approach] = self._own_parts(self._rendered(approach), approach)
            return self._arm_parts[approach]
        if self.operator_workload is None:
            known = chosen.known_desired(self.target, TRIAL_NAMESPACE)
            if known is not None:
                self.operator_workload = self._named(known)
        return self.operator_workload

    def workloads(self, approaches: Sequence[str]) -> list[Workload]:
        """The parts of each of the approaches (`parts`) that are known, in their order."""
        return [w for a in approaches if (w := self.parts(a)) is not None]

    def own_operator(self, approaches: Sequence[str]) -> bool:
        """Whether every approach among them whose own parts faults act on
        (`Approach.fault_targets`: an operator process) runs them on this machine for this app
        (`Approach.target_controllers`: the toolkit's shared operator, or a target's
        `install.process`); faults that stop them apply only then, not to an operator the
        toolkit does not run."""
        chosen = [registry.get(a) for a in approaches]
        return all(
            a.target_controllers(self.target) is not None
            for a in chosen
            if a.fault_targets and a.arm(self.target) is not None
        )

    def deploy(
        self,
        approach: Approach,
        cluster: ClusterTarget,
        api: client.ApiClient,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> Deployed:
        """Deploy into a trial's namespace and wait until the desired state holds."""
        # What its deploy reports is the desired state (a release's manifest, or an
        # operator's baseline of owned objects) and the faults act on its parts.
        # The preflight (or the run's start) checked and installed the arm once: a trial only
        # deploys it, with no per-trial cluster check (an operator's kustomize build).
        done = deploy_arm(
            approach, cluster, self.target.for_trial(namespace), namespace, timeout=timeout,
            install=False, rollback=False, check=False, cancel=cancel,
        )  # fmt: skip
        deployed = done.deployed
        # The parts as the trial's release names them; the judge reads the same ones.
        workload_names, service_names = self.target.part_names(approach.name, namespace)
        desired = deployed.desired.with_parts(workload_names, service_names)
        parts = self._parts(done, approach.name, namespace)
        return Deployed(desired, parts, deployed.events_on or self.target.name)

    def info(self) -> AppInfo:
        """How results.json names the app."""
        kind = ", ".join(self.target.resource_kinds) or None
        return AppInfo(name=self.target.name, spec=dict(self.target.app_spec), kind=kind)

    def target_info(self) -> TargetInfo | None:
        """The target file results.json names (None: the built-in target has none)."""
        if not self.target.from_file:
            return None
        return TargetInfo(name=self.target.name, file=str(self.target.source))

    def _named(
        self,
        objects: Sequence[Mapping[str, Any]],
        source: str = "the app's manifest",
        arm: str | None = None,
        namespace: str | None = None,
    ) -> Workload:
        """`workload_of` the objects, with the parts the target file names (as a trial in
        `namespace` names them, for chart arm `arm`); a name they do not hold is one line
        naming the file and the key."""
        workload_names, service_names = self.target.part_names(arm, namespace)
        try:
            return workload_of(
                objects, source=source, workload_names=workload_names, service_names=service_names
            )
        except PartNotFound as exc:
            raise CompareError(f"{self.target.source}: {exc}", exit_code=EXIT_USAGE) from None

    def _own_parts(self, rendered: list[dict[str, Any]], arm: str) -> Workload:
        """The parts of chart arm `arm`'s rendering the faults act on: its own (an object it
        renders into another namespace is judged, never acted on by a fault)."""
        own = [o for o in rendered if elsewhere(o, TRIAL_NAMESPACE) is None]
        return self._named(own, arm=arm)

    def _parts(
        self, done: ArmDeployed, arm: str | None = None, namespace: str | None = None
    ) -> Workload:
        """The parts of a deployed arm the faults act on: of its desired objects (an
        operator's baseline of owned objects is read as such)."""
        objects = [item.raw for item in done.deployed.desired.items]
        source = OWNED if done.deployed.owned else "the app's manifest"
        return self._named(objects, source, arm, namespace)
