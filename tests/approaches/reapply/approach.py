"""`reapply`: a target's chart arm rendered, applied server-side and applied again every two
seconds by its own controller (`controllers`), the plainest self-healing there is.

It is defined here, outside `compare/`, through the interface alone and registered by the
tests that use it; `compare deploy/undeploy reapply`, `compare status` and `compare run -a
reapply` need nothing else.

Its arm: a chart, a target file's `reapply` key (the built-in target has one, as it has for
every registered approach). Its desired state is that arm's rendering; the rendering is
stored (`manifests`) where its controller and `compare status` (`discover`) find it. Nothing
watches: its cadence is one interval (and a pass), no Event announces a correction (no
detector). Not part of a default run.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.approaches import Cadence, LocalControllers, TargetDeploy
from compare.approaches.charted import Charted
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import desired_of
from compare.deploy.live import wait_for_desired_state
from compare.deploy.rows import DeployedApp, judged_row
from compare.errors import CompareError
from compare.judge import DesiredObjects
from compare.kube.served import apply_all, delete_all
from compare.target import Target
from compare.target.builtin import builtin_release
from tests.approaches.reapply import controllers
from tests.approaches.reapply.controller import FIELD_MANAGER
from tests.approaches.reapply.manifests import Stored, drop, locked, read_all, read_one, store

UNDEPLOY_TIMEOUT_S = 60.0
# A pass applies a few objects: well under a second on the embedded cluster.
PASS_S = 1.0


@dataclass(frozen=True)
class Reapply(Charted):
    name = "reapply"
    short = "reap"
    label = "re-applied manifests"
    arm_description = "The reapply approach: a chart applied again every two seconds."
    default = False

    def controllers(self) -> LocalControllers:
        return controllers.CONTROLLERS

    def cadence(self) -> Cadence | None:
        return Cadence(
            controllers.INTERVAL_S + PASS_S,
            f"re-apply every {controllers.INTERVAL_S:g} s + {PASS_S:g} s a pass",
        )

    def prepare(self, cluster: ClusterTarget) -> None:
        controllers.start(cluster)

    def recover(self, cluster: ClusterTarget) -> None:
        controllers.start(cluster)

    def deploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> TargetDeploy:
        started = time.monotonic()
        install = self.chart_arm(target)
        objects = self._rendered(target, namespace)
        directory = controllers.state_dir(cluster)
        with locked(directory):
            store(directory, Stored(namespace, install.release, dict(install.values), objects))
        api = cluster.api_client()
        try:
            apply_all(api, objects, field_manager=FIELD_MANAGER, namespace=namespace)
            desired = desired_of(api, namespace, objects)
            wait_for_desired_state(
                api, namespace, desired, timeout=timeout, started=started,
                what=self.target_what(target), cancel=cancel,
            )  # fmt: skip
        finally:
            api.close()
        return TargetDeploy(desired)

    def undeploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float | None = None,
    ) -> bool:
        release = self.chart_arm(target).release
        directory = controllers.state_dir(cluster)
        # Dropped under the lock first: no pass applies it again once the objects go.
        with locked(directory):
            stored = read_one(directory, namespace, release)
            drop(directory, namespace, release)
        if stored is None:
            return False
        api = cluster.api_client()
        try:
            delete_all(api, stored.objects, timeout=timeout or UNDEPLOY_TIMEOUT_S,
                       namespace=namespace)  # fmt: skip
        finally:
            api.close()
        return True

    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        # What was stored (and applied), else what would be: the rendering.
        stored = read_one(controllers.state_dir(cluster), namespace, self.chart_arm(target).release)
        objects = stored.objects if stored else self._rendered(target, namespace)
        return desired_of(api, namespace, objects)

    def target_what(self, target: Target) -> str:
        return f"reapply manifest {self.chart_arm(target).release}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        release = self.chart_arm(target).release
        stored = read_one(controllers.state_dir(cluster), namespace, release)
        if stored is None:
            return None
        running = controllers.running(cluster)
        detail = (
            f"re-applied every {controllers.INTERVAL_S:g} s (pid {running.pid})"
            if running is not None
            else "controller stopped"
        )
        api = cluster.api_client()
        try:
            return judged_row(
                api, approach=self.name, name=release, namespace=namespace, detail=detail,
                desired=desired_of(api, namespace, stored.objects),
            )  # fmt: skip
        finally:
            api.close()

    def discover(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[tuple[Target, str]]:
        # Every stored manifest, as the built-in chart's release it is.
        return [
            (builtin_release(self.name, s.release, s.namespace, s.values), s.namespace)
            for s in read_all(controllers.state_dir(cluster), namespace)
        ]

    def _rendered(self, target: Target, namespace: str) -> list[dict[str, Any]]:
        objects = self.known_desired(target, namespace)
        if objects is None:  # a chart arm always renders (or raises)
            raise CompareError(f"{self.target_what(target)}: renders nothing")
        return objects
