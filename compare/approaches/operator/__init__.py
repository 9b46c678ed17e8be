"""The operator approach: an operator's custom resources, reconciled continuously.

Every deploy goes one way (`deploy_target`): the target's operator installed, its custom
resources applied and waited for until ready, the desired state then held. The built-in
WebApp is the target whose operator is the toolkit's own (install form `toolkit`,
`compare.target.builtin.builtin_operator`): one local process per cluster that every
namespace's WebApp shares. `prepare` installs it (CRD, webhook, RBAC) and starts it, `recover`
starts it again after a fault that stopped it; it is never removed by a deploy's undo. A
WebApp carries a finalizer only the running operator clears, so a trial's CR is deleted
(operator running) before its namespace. Its desired state is the built-in chart's rendering
of the WebApp (`compare.approaches.operator.reference`), and its operator posts `DriftCorrected`,
`Created`, `Recreated` or `PodReplaced` on the WebApp for every correction: the Events that
time detection. Any other
operator's desired state is the objects its custom resources own once ready (a baseline),
and any Event it posts on one of them times detection.

`compare deploy operator` installs the toolkit's operator for a target whose install form is
`toolkit` (the built-in WebApp's: `--webhook-host`), saying what it found or installed;
`compare undeploy operator` then stops it once no WebApp is left in the cluster (or when asked:
`--stop-operator`): while WebApps remain, they need it - for their reconciles, their finalizers,
and the webhook (failurePolicy Fail) that admits their writes. After a target file's resources,
it removes the operator's install once no resource of its kinds is left (never an
`alreadyInstalled` one, nor the toolkit's own). `--keep-operator` leaves either as it is.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from kubernetes import client
from pydantic import ValidationError

from compare import kube
from compare.approaches.base import Approach, builtin_target
from compare.approaches.commands import CommandOption, Commands, Options
from compare.approaches.contract import (
    Arms,
    Detector,
    LocalControllers,
    RunsControllers,
    TargetDeploy,
)
from compare.approaches.operator import baseline
from compare.approaches.operator import controllers as operator_path
from compare.approaches.operator.arm import (
    REMOVE_TIMEOUT_S,
    Install,
    check_served,
    deploy_resources,
    install,
    install_documents,
    plan_install,
    remaining,
    remove_resources,
    uninstall,
    webapp_desired,
)
from compare.approaches.operator.reference import operator_reference
from compare.approaches.operator.status import target_operator_app
from compare.approaches.operator.target_process import TargetProcess
from compare.cluster import ClusterTarget
from compare.deploy.rows import DeployedApp
from compare.errors import EXIT_USAGE, CompareError
from compare.judge import DesiredObjects
from compare.kube import served as custom
from compare.target import Operator as OperatorArm
from compare.target import Target
from compare.target.builtin import webapp_named
from compare.webapp import KIND, WebApp

# The reasons of the operator's Events on a WebApp that announce a correction: an existing
# child changed back, a child created (it was deleted) or deleted and re-created (an immutable
# field differed), a pod changed in place replaced.
REASONS = ("DriftCorrected", "Created", "Recreated", "PodReplaced")
# `compare undeploy operator`'s default wait.
COMMAND_UNDEPLOY_TIMEOUT_S = 60.0

WEBHOOK_HOST = CommandOption(
    "webhook_host",
    ("--webhook-host",),
    str,
    help="Address the API server can reach this machine at; without it the webhook is"
    " registered on the embedded cluster only.",
)
NAME = CommandOption(
    "name",
    ("--name",),
    str,
    help="WebApp to delete (default: the name in --app).",
    names_app=True,
)
STOP = CommandOption(
    "stop",
    ("--stop-operator",),
    bool,
    default=False,
    help="Stop the local operator even though WebApps remain in the cluster (they are then"
    " neither reconciled nor admitted: the webhook rejects their writes).",
)
KEEP = CommandOption(
    "keep_operator",
    ("--keep-operator",),
    bool,
    default=False,
    help="Leave the operator running even when no WebApp is left.",
    with_target=True,
)


def builtin(arm: WebApp | OperatorArm) -> Target:
    """The built-in target whose operator arm is `arm`: a WebApp for the toolkit's own
    operator (`builtin_target`), or such an arm as given (`webapp_named`)."""
    if isinstance(arm, WebApp):
        return builtin_target(arm)
    name = str(arm.resources[0]["metadata"]["name"])
    return Target(source=Path(KIND), name=name, namespace=None, arms={Operator.name: arm})


class OperatorCommands(Commands):
    deploy_options: ClassVar[tuple[CommandOption, ...]] = (WEBHOOK_HOST,)
    undeploy_options: ClassVar[tuple[CommandOption, ...]] = (NAME, STOP, KEEP)
    undeploy_timeout: ClassVar[float] = COMMAND_UNDEPLOY_TIMEOUT_S
    deploy_help: ClassVar[str] = (
        "Install the CRD, RBAC and webhook, run the operator, apply the WebApp CR."
    )
    undeploy_help: ClassVar[str] = (
        "Delete the WebApp CR (its finalizer runs); stop the local operator when no WebApp is"
        " left in the cluster, or with --stop-operator."
    )

    def check_options(self, options: Options) -> None:
        if options.get("stop") and options.get("keep_operator"):
            raise CompareError(
                "--stop-operator and --keep-operator contradict each other", exit_code=EXIT_USAGE
            )
        operator_path.check_webhook_host(options.get("webhook_host"))

    def command_target(
        self, approach: Arms, webapp: WebApp | None, source: Path | None, options: Options
    ) -> Target:
        if webapp is None:
            # `--name`: the toolkit operator's arm naming that WebApp, all its removal needs.
            return builtin(webapp_named(str(options["name"])))
        return super().command_target(approach, webapp, source, options)

    def command_install(
        self, approach: RunsControllers, cluster: ClusterTarget, target: Target, options: Options
    ) -> tuple[str, ...]:
        # The toolkit's operator (the built-in WebApp's) is found or installed here, where the
        # webhook's host can be given and what happened is said; any other `install_target`
        # installs with the arm (and removes it again when the deploy fails).
        if not target.operator_arm(Operator.name).toolkit:
            return ()
        handle = operator_path.install_operator(cluster, webhook_host=options.get("webhook_host"))
        where = cluster.describe()
        if handle.found:
            return (f"operator found on {where}: nothing installed", f"  {handle.describe()}")
        webhook = handle.webhook_url or "not registered (no --webhook-host for this cluster)"
        return (
            f"operator installed on {where}",
            "  CRD webapps.example.com, RBAC (ServiceAccount webapp-system/webapp-operator)",
            f"  validating webhook: {webhook}",
            f"  {handle.describe()}",
        )

    def after_undeploy(
        self, cluster: ClusterTarget, target: Target, ns: str, options: Options, *, builtin: bool
    ) -> tuple[str, ...]:
        if options.get("keep_operator"):
            return ()
        if builtin:
            return _stop_when_unused(
                cluster, target.operator_arm(Operator.name), stop=bool(options.get("stop"))
            )
        return _remove_install(cluster, target, target.operator_arm(Operator.name), ns)


@dataclass(frozen=True)
class Operator(Approach):
    name = "operator"
    short = "op"
    label = "WebApp resources"
    arm_kind = "operator"
    arm_description = "The operator approach."
    # The faults that stop or kill the operator's process (`stop_operator`) act on it.
    fault_targets: ClassVar[Mapping[str, str]] = {
        "operator": "an operator process the toolkit runs (its own, or a target's"
        " install.process), not an operator it does not run"
    }
    commands = OperatorCommands()

    def prepare(self, cluster: ClusterTarget) -> None:
        operator_path.install_operator(cluster)

    def controllers(self) -> LocalControllers:
        return operator_path.LocalOperator()

    def target_controllers(self, target: Target) -> LocalControllers | None:
        # A target's `install.process` is the one the faults stop and start (its install
        # started it; a run's preflight stops it at the end).
        arm = self.arm(target)
        if isinstance(arm, OperatorArm) and arm.install.process is not None:
            return TargetProcess(target.name, arm.install.process)
        return super().target_controllers(target)

    def recover(self, cluster: ClusterTarget) -> None:
        status = operator_path.operator_status(cluster)
        if status is None or not status.running:
            operator_path.start_operator(cluster)

    def shares(self, target: Target) -> bool:
        # Only the toolkit's own operator is shared; one a target installs itself is its
        # run's preflight's, never started again by the run.
        arm = self.arm(target)
        return isinstance(arm, OperatorArm) and arm.toolkit

    def known_desired(self, target: Target, namespace: str) -> list[dict[str, Any]] | None:
        # The toolkit's: the chart's rendering of the same WebApps as the operator applies them,
        # an independent reference, never the operator's own builders (`reference`).
        # Any other operator's children are known only once it has made them.
        operator = target.operator_arm(self.name)
        if not operator.toolkit:
            return None
        return [obj for w in operator.webapps for obj in operator_reference(w, namespace)]

    def discover(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[tuple[Target, str]]:
        # Every WebApp as the built-in target's operator arm: the live spec is its desired
        # state; one whose spec does not validate is named by name alone (its row says so).
        found = []
        for cr in custom.listed(api, operator_path.WEBAPPS, namespace):
            meta = cr["metadata"]
            try:
                arm: WebApp | OperatorArm = WebApp.model_validate(
                    {k: cr.get(k) for k in ("apiVersion", "kind", "metadata", "spec")}
                )
            except ValidationError:
                arm = webapp_named(str(meta["name"]))
            found.append((builtin(arm), str(meta["namespace"])))
        return found

    def detector(self, app_target: Target | None = None) -> Detector:
        custom: tuple[str, ...] = ()
        operator = self.arm(app_target) if app_target is not None else None
        if isinstance(operator, OperatorArm) and not operator.toolkit:
            custom = tuple(str(r.get("kind")) for r in operator.resources)
        return Detector({KIND: REASONS}, custom)

    def deploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> TargetDeploy:
        # The custom resources applied here; once ready, what they own is the baseline (the
        # desired state) and the faults act on its parts. Its (first) custom resource
        # carries the Events that announce a correction.
        operator = target.operator_arm(self.name)
        warnings: list[str] = []
        desired = deploy_resources(
            cluster, target, operator, namespace, timeout=timeout, cancel=cancel,
            warn=warnings.append,
        )  # fmt: skip
        how = {
            "alreadyInstalled": "already installed (checked)",
            "kustomize": f"installed from {operator.install.kustomize}",
            "chart": "installed as a Helm release",
            "process": "run as a local process (stopped when its install is removed)",
            "toolkit": "the toolkit's own (a local process, shared; never removed here)",
        }[operator.install.form]
        ready = f"condition {operator.ready_condition}" if operator.ready_condition else "children"
        stored = f"Secret {namespace}/{baseline.baseline_name(target.name)}"
        facts: tuple[tuple[str, str], ...] = (("ready by", ready),)
        reached, details = ("baseline taken",), (("stored", stored),)
        if operator.toolkit:
            # No baseline: each WebApp is held to the built-in chart's rendering of it.
            facts = tuple(
                fact
                for w in operator.webapps
                for fact in (("replicas", str(w.spec.replicas)), ("image", w.spec.image))
            )
            reached, details = ("Available",), (("desired", "the built-in chart's rendering"),)
        return TargetDeploy(
            desired,
            events_on=str(operator.resources[0]["metadata"]["name"]),
            owned=not operator.toolkit,
            facts=facts,
            reached=reached,
            details=(*details, ("operator", how)),
            warnings=tuple(warnings),
        )

    def undeploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float | None = None,
    ) -> bool:
        # Its finalizers run while the namespace is still there.
        operator = target.operator_arm(self.name)
        return remove_resources(
            cluster, target, operator, namespace, timeout=timeout or REMOVE_TIMEOUT_S
        )

    def check_target(self, target: Target, namespace: str) -> None:
        # The kustomize build / chart rendering of the operator's install, no cluster (the
        # toolkit's WebApps were checked when the file was loaded).
        install_documents(target, target.operator_arm(self.name), namespace)

    def check_target_on(self, cluster: ClusterTarget, target: Target, namespace: str) -> None:
        check_served(cluster, target, target.operator_arm(self.name), namespace)

    def install_target(
        self, cluster: ClusterTarget, target: Target, namespace: str, *, timeout: float
    ) -> Callable[[], None] | None:
        operator = target.operator_arm(self.name)
        plan = plan_install(cluster, target, operator, namespace)
        remove = partial(uninstall, cluster, target, operator, plan, created_only=True)
        try:
            if plan.form == "kustomize" or (
                plan.form == "process"
                and any(d.get("kind") != "CustomResourceDefinition" for d in plan.documents)
            ):
                # Its unnamespaced objects go here: a namespace made for them goes with them.
                with cluster.api_client() as api:
                    plan.namespace_created = kube.ensure_namespace(api, namespace)
            install(cluster, target, operator, plan, timeout=timeout)
        except BaseException:
            remove()
            raise
        return remove

    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        # The toolkit's: the built-in chart's rendering of its WebApps; any other operator's:
        # the baseline of owned objects the trial's deploy stored.
        operator = target.operator_arm(self.name)
        if operator.toolkit:
            return webapp_desired(api, operator, namespace)
        return baseline.load_desired(api, namespace, target.name)

    def target_what(self, target: Target) -> str:
        # Every custom resource of the arm, as the deploy's headline named them.
        resources = target.operator_arm(self.name).resources
        return ", ".join(f"{r['kind']} {r['metadata']['name']}" for r in resources)

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        return target_operator_app(cluster, target, target.operator_arm(self.name), namespace)


def _stop_when_unused(cluster: ClusterTarget, arm: OperatorArm, *, stop: bool) -> tuple[str, ...]:
    """The toolkit's local operator stopped once no WebApp is left in the cluster, or when
    asked (`stop`)."""
    left = remaining(cluster, arm)
    if left and not stop:
        return (
            f"operator left running: {left} WebApp(s) remain in the cluster"
            " (--stop-operator stops it anyway)",
        )
    stopped = operator_path.stop_operator(cluster)
    if stopped is None:
        return ("no local operator serves this cluster: nothing stopped",) if stop else ()
    lines = [f"operator stopped (pid {stopped.pid}, log {stopped.log_path})"]
    if left:
        lines.append(
            f"warning: {left} WebApp(s) remain without an operator; the webhook rejects their"
            " writes until `compare deploy operator` runs again"
        )
    return tuple(lines)


def _remove_install(
    cluster: ClusterTarget, target: Target, operator: OperatorArm, namespace: str
) -> tuple[str, ...]:
    """After a target's custom resources are gone: the operator's install removed when no
    resource of its kinds is left in the cluster (never an `alreadyInstalled` one, nor the
    toolkit's own, which every WebApp shares)."""
    if operator.install.form == "alreadyInstalled":
        return ("operator left as it is (alreadyInstalled: never installed or removed here)",)
    if operator.install.form == "toolkit":
        return ("operator left as it is (the toolkit's own: shared, never removed here)",)
    left = remaining(cluster, operator)
    if left:
        return (f"operator left installed: {left} resource(s) of its kinds remain",)
    chart = operator.install.chart
    documents = install_documents(target, operator, namespace)
    where = (chart.namespace if chart is not None else None) or namespace
    done = Install(operator.install.form, where, documents)
    uninstall(cluster, target, operator, done, created_only=False)
    return ("operator removed (no resource of its kinds was left)",)
