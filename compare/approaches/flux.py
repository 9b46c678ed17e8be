"""Helm through the real Flux controllers: a HelmRelease that helm-controller installs and,
with drift detection on, corrects at every reconcile (`interval`).

`prepare` starts the chart server, source-controller and helm-controller (shared by every
namespace). A HelmRelease and its HelmRepository carry finalizers the running controllers
clear, so `cleanup` deletes them before a trial's namespace goes. helm-controller posts
`DriftDetected` on the HelmRelease (named after the app) when a reconcile finds drift, before
it corrects it: the Event that times detection (whole seconds only). The interval is
this approach's setting (`compare run --flux-interval`), carried by the instance.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.approaches.base import (
    UNDEPLOY_TIMEOUT_S,
    Approach,
    Cadence,
    Detector,
    TargetDeploy,
)
from compare.cluster import ClusterTarget
from compare.deploy import flux as flux_path
from compare.deploy.flux_install import ensure_flux_binaries
from compare.deploy.flux_status import flux_apps
from compare.deploy.rows import DeployedApp
from compare.deploy.target_flux import (
    deploy_target_flux,
    flux_arm,
    flux_release_desired,
    target_flux_app,
    undeploy_target_flux,
)
from compare.judge import DesiredObjects
from compare.target import Target
from compare.webapp import WebApp


@dataclass(frozen=True)
class Flux(Approach):
    name = "flux"
    short = "flux"
    label = "Flux HelmReleases"
    charted = True

    # Seconds between helm-controller's reconciles of a HelmRelease (it corrects drift at
    # the next one).
    interval: float = flux_path.DEFAULT_INTERVAL_S

    def settings(self) -> dict[str, Any]:
        return {"interval": self.interval}

    def run_settings(self) -> dict[str, Any]:
        return {"flux_interval_seconds": self.interval}

    def check_settings(self, heal_window: float) -> None:
        flux_path.check_interval(self.interval, heal_window)

    def cadence(self) -> Cadence:
        # It corrects drift only at its next reconcile, up to one jittered interval away.
        return Cadence(*flux_path.interval_cadence(self.interval))

    def prepare(self, cluster: ClusterTarget) -> None:
        flux_path.start_flux(cluster)

    def deploy(
        self,
        cluster: ClusterTarget,
        webapp: WebApp,
        namespace: str,
        *,
        cancel: threading.Event | None = None,
    ) -> None:
        flux_path.deploy_flux(cluster, webapp, namespace, interval=self.interval, cancel=cancel)

    def desired(
        self, webapp: WebApp, namespace: str, *, release: str | None = None
    ) -> list[dict[str, Any]]:
        # The chart's rendered manifest, which helm-controller installs with the same values
        # and release name, plus what helm-controller writes on every object.
        return flux_path.flux_manifest(webapp, namespace, release=release)

    def status(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[DeployedApp]:
        return flux_apps(api, namespace)

    def undeploy(
        self,
        cluster: ClusterTarget,
        webapp: WebApp,
        namespace: str,
        *,
        timeout: float = UNDEPLOY_TIMEOUT_S,
    ) -> None:
        flux_path.undeploy_flux(cluster, namespace, release=webapp.name, timeout=timeout)

    def detector(self, app_target: Target | None = None) -> Detector:
        return Detector({"HelmRelease": ("DriftDetected",)})

    def deploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> TargetDeploy:
        # A HelmRelease per namespace; its release's manifest is the desired state,
        # helm-controller posts its drift Events on the HelmRelease.
        install = flux_arm(target)
        desired = deploy_target_flux(
            cluster,
            target,
            install,
            namespace,
            interval=self.interval,
            timeout=timeout,
            cancel=cancel,
        )
        kinds = sorted({item.kind for item in desired.items})
        return TargetDeploy(
            desired,
            events_on=install.release,
            headline=f"HelmRelease {namespace}/{install.release} (chart"
            f" {install.chart.describe()}, interval {flux_path.format_interval(self.interval)},"
            " drift detection enabled): Ready, desired state holds",
            notes=(f"{len(desired.items)} objects: {', '.join(kinds)}",),
        )

    def undeploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float | None = None,
    ) -> bool:
        install = flux_arm(target)
        return undeploy_target_flux(
            cluster, install, namespace, timeout=timeout or flux_path.DEFAULT_TIMEOUT_S
        )

    def check_target(self, target: Target, namespace: str) -> None:
        super().check_target(target, namespace)
        ensure_flux_binaries()

    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        # The release of the trial's HelmRelease.
        install = flux_arm(target)
        return flux_release_desired(cluster, api, target, install, namespace)

    def target_what(self, target: Target) -> str:
        return f"flux HelmRelease {flux_arm(target).release}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        return target_flux_app(cluster, target, flux_arm(target), namespace)
