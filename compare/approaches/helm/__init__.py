"""Plain Helm: `helm upgrade --install` of the chart, once; nothing watches the release after.

Nothing is shared between releases (no controller to start), Helm posts no Events (detection
is not observable), and a trial's release lives in its namespace: deleting the namespace
removes it, so `cleanup` has nothing to do before a trial's namespace goes. `compare deploy
helm` takes `--release` and `--values` for the built-in WebApp (`charted.ChartCommands`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any, ClassVar

from kubernetes import client

from compare.approaches.charted import ChartCommands, Charted
from compare.approaches.contract import TargetDeploy
from compare.approaches.helm.status import target_app
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.chart_target import (
    deploy_target,
    release_desired,
    uninstall_target,
)
from compare.deploy.charts import get_release, list_releases
from compare.deploy.ownership import helm_applied
from compare.deploy.rows import DeployedApp
from compare.judge import DesiredObjects
from compare.target import Target
from compare.target.builtin import builtin_release


class HelmCommands(ChartCommands):
    deploy_help: ClassVar[str] = (
        "Install or upgrade the WebApp (or a --target file's chart) as a Helm release and wait"
        " until its desired state holds."
    )
    undeploy_help: ClassVar[str] = (
        "Uninstall the Helm release (or a --target file's) and wait until its objects and pods"
        " are gone."
    )


@dataclass(frozen=True)
class Helm(Charted):
    name = "helm"
    short = "helm"
    label = "helm releases"
    arm_description = "The Helm approach."
    # `helm upgrade --post-renderer`: `dropUnservedWebhooks` (`compare.deploy.post_render`).
    post_renders = True
    # `disableHooks`: `helm --no-hooks`.
    disables_hooks = True
    commands = HelmCommands()

    def applied(
        self, rendered: list[dict[str, Any]], release: str, namespace: str
    ) -> list[dict[str, Any]]:
        # Helm's own ownership metadata: exactly what `helm upgrade --install` applies.
        return helm_applied(rendered, release=release, namespace=namespace)

    def discover(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[tuple[Target, str]]:
        # Every release of the built-in chart, whatever its name and values: its applied
        # manifest is its desired state.
        return [
            (builtin_release("helm", r.release, r.namespace), r.namespace)
            for r in list_releases(cluster, namespace)
        ]

    def cleanup(self, cluster: ClusterTarget, target: Target, namespace: str) -> None:
        # The toolkit's own chart makes nothing outside the namespace: the release and its
        # record go with it. Any other chart's cluster-scoped objects do not.
        if not target.own_chart:
            self.undeploy_target(cluster, target, namespace)

    def deploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> TargetDeploy:
        # The release's own manifest is the desired state; the faults act on its parts.
        install = target.chart_arm(self.name)
        deployed, desired = deploy_target(
            cluster, target, install, namespace, timeout=timeout, cancel=cancel
        )
        return TargetDeploy(
            desired,
            facts=(
                ("revision", str(deployed.revision)),
                ("chart", install.chart.describe()),
                ("version", deployed.chart_version),
            ),
        )

    def undeploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float | None = None,
    ) -> bool:
        install = target.chart_arm(self.name)
        if get_release(cluster, namespace, install.release) is None:
            return False
        uninstall_target(cluster, install, namespace, timeout=timeout or DEPLOY_TIMEOUT_S)
        return True

    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        # The release the trial installed in `namespace`.
        install = target.chart_arm(self.name)
        return release_desired(cluster, api, target, install, namespace)

    def target_what(self, target: Target) -> str:
        return f"helm release {target.chart_arm(self.name).release}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        return target_app(cluster, target, target.chart_arm(self.name), namespace)
