"""The operator approach: an operator's custom resources, reconciled continuously.

Every deploy goes one way (`deploy_target`): the target's operator installed, its custom
resources applied and waited for until ready, the desired state then held. The built-in
WebApp is the target whose operator is the toolkit's own (install form `toolkit`,
`compare.target.builtin.builtin_operator`): one local process per cluster that every
namespace's WebApp shares. `prepare` installs it (CRD, webhook, RBAC) and starts it, `recover`
starts it again after a fault that stopped it; it is never removed by a deploy's undo. A
WebApp carries a finalizer only the running operator clears, so a trial's CR is deleted
(operator running) before its namespace. Its desired state is the built-in chart's rendering
of the WebApp (`compare.deploy.reference`), and its operator posts `DriftCorrected` or
`Created` on the WebApp for every correction: the Events that time detection. Any other
operator's desired state is the objects its custom resources own once ready (a baseline),
and any Event it posts on one of them times detection.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client

from compare.approaches.base import UNDEPLOY_TIMEOUT_S, Approach, Detector, TargetDeploy
from compare.cluster import ClusterTarget
from compare.deploy import baseline
from compare.deploy import operator as operator_path
from compare.deploy.operator_arm import (
    REMOVE_TIMEOUT_S,
    check_served,
    deploy_resources,
    ensure_namespace,
    install,
    install_documents,
    operator_arm,
    plan_install,
    remove_resources,
    uninstall,
    webapp_desired,
)
from compare.deploy.reference import operator_reference
from compare.deploy.rows import DeployedApp
from compare.deploy.status import target_operator_app, webapp_apps
from compare.judge import DesiredObjects
from compare.kube import Deadline, check_namespace_name
from compare.target import Operator as OperatorArm
from compare.target import Target
from compare.target.builtin import builtin_target
from compare.webapp import KIND, WebApp

# The reasons of the operator's Events on a WebApp that announce a correction: an existing
# child changed back, or a child recreated.
REASONS = ("DriftCorrected", "Created")
# A built-in deploy, the toolkit's operator's install included.
DEPLOY_TIMEOUT_S = 120.0


def builtin(arm: WebApp | OperatorArm) -> Target:
    """The built-in target whose operator arm is `arm`: a WebApp for the toolkit's own
    operator (`builtin_target`), or such an arm as given (`webapp_named`)."""
    if isinstance(arm, WebApp):
        return builtin_target(arm)
    name = str(arm.resources[0]["metadata"]["name"])
    return Target(source=Path(KIND), name=name, namespace=None, operator=arm)


@dataclass(frozen=True)
class Operator(Approach):
    name = "operator"
    short = "op"
    label = "WebApp resources"

    def prepare(self, cluster: ClusterTarget) -> None:
        operator_path.install_operator(cluster)

    def recover(self, cluster: ClusterTarget) -> None:
        status = operator_path.operator_status(cluster)
        if status is None or not status.running:
            operator_path.start_operator(cluster)

    def deploy(
        self,
        cluster: ClusterTarget,
        webapp: WebApp,
        namespace: str,
        *,
        cancel: threading.Event | None = None,
        timeout: float = DEPLOY_TIMEOUT_S,
    ) -> None:
        # The built-in target: the toolkit's operator installed (unless it runs), then its arm.
        check_namespace_name(namespace)
        deadline = Deadline(timeout)
        self.prepare(cluster)
        ensure_namespace(cluster, namespace)
        target = builtin(webapp)
        self.deploy_target(
            cluster, target, namespace, timeout=deadline.remaining(1.0), cancel=cancel
        )

    def desired(
        self, webapp: WebApp, namespace: str, *, release: str | None = None
    ) -> list[dict[str, Any]]:
        # The chart's rendering of the same WebApp as the operator applies it: an independent
        # reference, never the operator's own builders (compare.deploy.reference).
        return operator_reference(webapp, namespace)

    def status(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[DeployedApp]:
        # Every WebApp, as the built-in target's row.
        return webapp_apps(cluster, namespace)

    def undeploy(
        self,
        cluster: ClusterTarget,
        webapp: WebApp,
        namespace: str,
        *,
        timeout: float = UNDEPLOY_TIMEOUT_S,
    ) -> None:
        # After operator-down-drift the operator may be stopped: the removal starts it (only
        # it clears the finalizer), as a trial's cleanup does (`undeploy_target`).
        self.undeploy_target(cluster, builtin(webapp), namespace, timeout=timeout)

    def detector(self, app_target: Target | None = None) -> Detector:
        custom: tuple[str, ...] = ()
        operator = app_target.operator if app_target is not None else None
        if operator is not None and not operator.toolkit:
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
        operator = operator_arm(target)
        warnings: list[str] = []
        desired = deploy_resources(
            cluster, target, operator, namespace, timeout=timeout, cancel=cancel,
            warn=warnings.append,
        )  # fmt: skip
        names = ", ".join(f"{b['kind']} {b['metadata']['name']}" for b in operator.resources)
        kinds = ", ".join(sorted({item.kind for item in desired.items}))
        ready = f"condition {operator.ready_condition}" if operator.ready_condition else "children"
        headline = f"{names} in namespace {namespace}: ready ({ready}), baseline taken"
        notes: tuple[str, ...] = (
            f"baseline:  {len(desired.items)} owned objects: {kinds}",
            f"stored:    Secret {namespace}/{baseline.baseline_name(target.name)}",
        )
        if operator.toolkit:
            # No baseline: each WebApp is held to the built-in chart's rendering of it.
            headline = "; ".join(
                f"{KIND} {namespace}/{w.name} is Available: {w.spec.replicas} replica(s) of"
                f" {w.spec.image}"
                for w in operator.webapps
            )
            notes = (f"desired:   the built-in chart's rendering: {kinds}",)
        how = {
            "alreadyInstalled": "operator already installed (checked)",
            "kustomize": f"operator installed from {operator.install.kustomize}",
            "chart": "operator installed as a Helm release",
            "toolkit": "the toolkit's own operator (a local process, shared; never removed here)",
        }[operator.install.form]
        return TargetDeploy(
            desired,
            events_on=str(operator.resources[0]["metadata"]["name"]),
            owned=not operator.toolkit,
            headline=headline,
            warnings=tuple(warnings),
            notes=(*notes, how),
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
        operator = operator_arm(target)
        return remove_resources(
            cluster, target, operator, namespace, timeout=timeout or REMOVE_TIMEOUT_S
        )

    def check_target(self, target: Target, namespace: str) -> None:
        # The kustomize build / chart rendering of the operator's install, no cluster (the
        # toolkit's WebApps were checked when the file was loaded).
        install_documents(target, operator_arm(target), namespace)

    def check_target_on(self, cluster: ClusterTarget, target: Target, namespace: str) -> None:
        check_served(cluster, target, operator_arm(target), namespace)

    def install_target(
        self, cluster: ClusterTarget, target: Target, namespace: str, *, timeout: float
    ) -> Callable[[], None] | None:
        operator = operator_arm(target)
        plan = plan_install(cluster, target, operator, namespace)

        def remove() -> None:
            uninstall(cluster, target, operator, plan, created_only=True)

        try:
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
        operator = operator_arm(target)
        if operator.toolkit:
            return webapp_desired(api, operator, namespace)
        return baseline.load_desired(api, namespace, target.name)

    def target_what(self, target: Target) -> str:
        first = operator_arm(target).resources[0]
        return f"{first['kind']} {first['metadata']['name']}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        return target_operator_app(cluster, target, operator_arm(target), namespace)
