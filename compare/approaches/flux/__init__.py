"""Helm through the real Flux controllers: a HelmRelease that helm-controller installs and,
with drift detection on, corrects at every reconcile (`interval`).

`prepare` starts the chart server, source-controller and helm-controller (shared by every
namespace). A HelmRelease and its HelmRepository carry finalizers the running controllers
clear, so `cleanup` deletes them before a trial's namespace goes. helm-controller posts
`DriftDetected` on the HelmRelease (named after the app) when a reconcile finds drift, before
it corrects it: the Event that times detection (whole seconds only). The interval is
this approach's setting (`compare run --flux-interval`), carried by the instance.

`compare deploy flux` takes `--release` and `--values` for the built-in WebApp, as Helm's does, and
`--flux-interval` (the setting) for any; `compare undeploy flux --stop-flux` stops the
controllers after.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from kubernetes import client

from compare.approaches.charted import RELEASE, RELEASE_TO_REMOVE, VALUES, ChartCommands, Charted
from compare.approaches.commands import CommandOption, Options
from compare.approaches.contract import (
    Cadence,
    Detector,
    LocalControllers,
    RunsControllers,
    TargetDeploy,
)
from compare.approaches.flux import controllers as flux_path
from compare.approaches.flux.arm import (
    deploy_target_flux,
    flux_arm,
    target_flux_app,
    undeploy_target_flux,
)
from compare.approaches.flux.install import ensure_flux_binaries
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.chart_target import release_desired
from compare.deploy.ownership import flux_applied
from compare.deploy.rows import DeployedApp
from compare.judge import DesiredObjects
from compare.target import HelmInstall, Target
from compare.target.builtin import builtin_release

INTERVAL = CommandOption(
    "interval",
    ("--flux-interval",),
    float,
    default=flux_path.DEFAULT_INTERVAL_S,
    help="The HelmRelease's reconcile interval in seconds: helm-controller checks for drift"
    " and corrects it once per interval.",
    bounds=(0.5, 3600),
    with_target=True,
)
# `compare run --flux-interval`: the same setting, added to the flux trials' heal window.
RUN_INTERVAL = replace(
    INTERVAL,
    help="Seconds between helm-controller's reconciles of the flux approach's HelmRelease (it"
    " corrects drift at the next one); added to its heal window (with --exact-heal-window it"
    " must be shorter than --heal-window).",
    with_target=False,
)
STOP_FLUX = CommandOption(
    "stop_flux",
    ("--stop-flux",),
    bool,
    default=False,
    help="Also stop the Flux controllers and the chart server and delete their ServiceAccounts"
    " and roles (the CRDs stay).",
    with_target=True,
)


class FluxCommands(ChartCommands):
    deploy_options: ClassVar[tuple[CommandOption, ...]] = (RELEASE, VALUES, INTERVAL)
    undeploy_options: ClassVar[tuple[CommandOption, ...]] = (RELEASE_TO_REMOVE, STOP_FLUX)
    run_options: ClassVar[tuple[CommandOption, ...]] = (RUN_INTERVAL,)
    deploy_help: ClassVar[str] = (
        "Deploy the WebApp as a Flux HelmRelease (drift detection enabled) from a local Helm"
        " repository, starting source-controller and helm-controller when needed."
    )
    undeploy_help: ClassVar[str] = (
        "Delete the HelmRelease (helm-controller uninstalls it) and its HelmRepository; wait"
        " until the release's objects are gone."
    )

    def command_install(
        self, approach: RunsControllers, cluster: ClusterTarget, target: Target, options: Options
    ) -> tuple[str, ...]:
        return (f"flux:      {flux_path.start_flux(cluster).describe()}",)

    def after_undeploy(
        self, cluster: ClusterTarget, target: Target, ns: str, options: Options, *, builtin: bool
    ) -> tuple[str, ...]:
        if not options.get("stop_flux"):
            return ()
        flux_path.remove_flux(cluster)
        return ("Flux controllers and chart server stopped; their identities deleted",)


@dataclass(frozen=True)
class Flux(Charted):
    name = "flux"
    short = "flux"
    label = "Flux HelmReleases"
    arm_description = "The Flux approach: a chart helm-controller installs."
    # helm-controller's post-renderers (a kustomize patch on the HelmRelease):
    # `dropUnservedWebhooks`.
    post_renders = True
    # `disableHooks`: the HelmRelease's `disableHooks`.
    disables_hooks = True
    commands = FluxCommands()

    # Seconds between helm-controller's reconciles of a HelmRelease (it corrects drift at
    # the next one).
    interval: float = flux_path.DEFAULT_INTERVAL_S

    def settings(self) -> dict[str, Any]:
        return {"interval": self.interval}

    def run_settings(self) -> dict[str, Any]:
        return {"intervalSeconds": self.interval}

    def describe_settings(self, settings: Mapping[str, Any]) -> str:
        # It corrects drift once per interval: its heal times scale with it.
        interval = settings.get("intervalSeconds")
        if settings.keys() != {"intervalSeconds"} or not _number(interval):
            return super().describe_settings(settings)
        return f"flux interval {interval:g} s"

    def check_settings(self, heal_window: float) -> None:
        flux_path.check_interval(self.interval, heal_window)

    def cadence(self) -> Cadence:
        # It corrects drift only at its next reconcile, up to one jittered interval away.
        return Cadence(*flux_path.interval_cadence(self.interval))

    def controllers(self) -> LocalControllers:
        return flux_path.FLUX

    def prepare(self, cluster: ClusterTarget) -> None:
        flux_path.start_flux(cluster)

    def chart_arm(self, target: Target) -> HelmInstall:
        return flux_arm(target)

    def applied(
        self, rendered: list[dict[str, Any]], release: str, namespace: str
    ) -> list[dict[str, Any]]:
        # helm-controller installs the chart with the same values and release name, and
        # writes its origin labels on every object.
        return flux_applied(rendered, release=release, namespace=namespace)

    def discover(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[tuple[Target, str]]:
        # Every HelmRelease of the built-in chart (named after its release), with its values;
        # its release's applied manifest is its desired state.
        found = []
        for obj in flux_path.list_helm_releases(api, namespace):
            meta, spec = obj["metadata"], obj.get("spec") or {}
            ns, values = str(meta["namespace"]), spec.get("values")
            found.append((builtin_release("flux", str(meta["name"]), ns, values), ns))
        return found

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
        return TargetDeploy(
            desired,
            events_on=install.release,
            facts=(
                ("chart", install.chart.describe()),
                ("interval", flux_path.format_interval(self.interval)),
                ("drift detection", "enabled"),
            ),
            reached=("Ready",),
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
            cluster, install, namespace, timeout=timeout or DEPLOY_TIMEOUT_S
        )

    def check_target(self, target: Target, namespace: str) -> None:
        super().check_target(target, namespace)
        ensure_flux_binaries()

    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        # The release of the trial's HelmRelease.
        install = flux_arm(target)
        return release_desired(cluster, api, target, install, namespace, applied=flux_applied)

    def target_what(self, target: Target) -> str:
        return f"flux HelmRelease {flux_arm(target).release}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        return target_flux_app(cluster, target, flux_arm(target), namespace)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
