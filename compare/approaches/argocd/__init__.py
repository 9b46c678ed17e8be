"""Helm charts through the real Argo CD controllers: an Application per app (charts/webapp from
the toolkit's local Helm repository), automated sync with `selfHeal` and `prune`.

`prepare` starts Redis, the chart server, argocd-repo-server and argocd-application-controller
(shared by every namespace; `controllers`). An Application carries Argo CD's resources finalizer,
which the running controller clears, so the default `cleanup` (the whole undeploy) deletes it before
a trial's namespace goes. Argo CD posts `OperationStarted` on the Application when it starts a sync,
its self-heal included: the Event that times detection (whole seconds). The diff strategy
(`three-way`, Argo CD's default, or `server-side`) is this approach's setting (`compare run
--argocd-diff`), carried by the instance and recorded in results.json, since it changes which drift
Argo CD sees.

Not part of a run without `--approach` (`default = False`): its controllers are the heaviest
part of a run and its ground truth is measured per fault only in docs/argocd.md so far.

A target's `argocd` key, the built-in WebApp's too, is a chart deployed by the target methods
here (`compare.approaches.argocd.arm`: one Application per trial namespace, under its release).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from kubernetes import client

from compare.approaches.argocd.application import THREE_WAY_DIFF
from compare.approaches.argocd.arm import (
    argocd_arm,
    deploy_target_argocd,
    left_by_argocd,
    target_argocd_app,
    target_argocd_desired,
)
from compare.approaches.argocd.controllers import ARGOCD, SELF_HEAL_BACKOFF_S, start_argocd
from compare.approaches.argocd.status import list_applications
from compare.approaches.argocd.sync import (
    chart_applied,
    check_diff_strategy,
    undeploy_argocd,
)
from compare.approaches.charted import Charted
from compare.approaches.commands import CommandOption, Commands, Options
from compare.approaches.contract import Cadence, Detector, LocalControllers, TargetDeploy
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.rows import DeployedApp
from compare.judge import DesiredObjects
from compare.target import HelmInstall, Target
from compare.target.builtin import builtin_release

# `compare run --argocd-diff`: the setting `diff`.
DIFF = CommandOption(
    "diff",
    ("--argocd-diff",),
    str,
    default=THREE_WAY_DIFF,
    help="How the argocd approach's application controller diffs the live objects:"
    " three-way (Argo CD's default) or server-side (ServerSideDiff=true).",
)


class ArgocdCommands(Commands):
    run_options: ClassVar[tuple[CommandOption, ...]] = (DIFF,)

    def check_options(self, options: Options) -> None:
        if "diff" in options:
            check_diff_strategy(options["diff"])

    def after_undeploy(
        self, cluster: ClusterTarget, target: Target, ns: str, options: Options, *, builtin: bool
    ) -> tuple[str, ...]:
        # Said once: what Argo CD's own rule left (its CRDs above all), not waited for.
        left = left_by_argocd(cluster, target, argocd_arm(target), ns)
        if not left:
            return ()
        return (f"left as Argo CD leaves them: {'; '.join(left)}",)


@dataclass(frozen=True)
class Argocd(Charted):
    name = "argocd"
    short = "argo"
    label = "Argo CD Applications"
    arm_description = "The Argo CD approach: a chart an Application syncs and self-heals."
    default: ClassVar[bool] = False
    commands = ArgocdCommands()

    # How the application controller diffs live objects against the rendered chart.
    diff: str = THREE_WAY_DIFF

    def settings(self) -> dict[str, Any]:
        return {"diff": self.diff}

    def run_settings(self) -> dict[str, Any]:
        return {"diff": self.diff}

    def describe_settings(self, settings: Mapping[str, Any]) -> str:
        # Its diff strategy decides which drift it sees at all.
        diff = settings.get("diff")
        if settings.keys() != {"diff"} or not isinstance(diff, str):
            return super().describe_settings(settings)
        return f"argocd diff {diff}"

    def check_settings(self, heal_window: float) -> None:
        check_diff_strategy(self.diff)

    def cadence(self) -> Cadence:
        # It sees drift on the watch event, but a second self-heal waits for its backoff.
        return Cadence(
            SELF_HEAL_BACKOFF_S, f"self-heal backoff {SELF_HEAL_BACKOFF_S:g} s (a second sync)"
        )

    def controllers(self) -> LocalControllers:
        return ARGOCD

    def prepare(self, cluster: ClusterTarget) -> None:
        start_argocd(cluster)

    def recover(self, cluster: ClusterTarget) -> None:
        start_argocd(cluster)

    def applied(
        self, rendered: list[dict[str, Any]], release: str, namespace: str
    ) -> list[dict[str, Any]]:
        # The repo-server renders the same chart and values; the application controller
        # writes its tracking annotation on every object.
        return chart_applied(rendered, namespace, release)

    def render_finding(self, fields: Sequence[str]) -> str | None:
        # The repo-server renders the chart itself (`helm template`, no cluster: a `lookup`
        # finds nothing) whenever it generates the Application's manifests again, and the
        # application controller applies what it rendered: a value the chart makes anew
        # each time is never the one the toolkit rendered, nor a stable one.
        if not fields:
            return None
        shown = ", ".join(fields[:3]) + (f" and {len(fields) - 3} more" if len(fields) > 3 else "")
        return f"Argo CD rewrites {shown} on every sync (the chart renders a new value each time)"

    def discover(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[tuple[Target, str]]:
        # Every Application of the built-in chart (named after its release, in the namespace
        # it deploys to), with its values: what it applies is their rendering.
        found = []
        for app in list_applications(api, namespace):
            meta, source = app["metadata"], (app.get("spec") or {}).get("source") or {}
            ns, values = str(meta["namespace"]), (source.get("helm") or {}).get("valuesObject")
            found.append((builtin_release("argocd", str(meta["name"]), ns, values), ns))
        return found

    def detector(self, app_target: Target | None = None) -> Detector:
        return Detector({"Application": ("OperationStarted",)})

    def chart_arm(self, target: Target) -> HelmInstall:
        # Also refuses a chart source Argo CD cannot take here, before anything is deployed.
        return argocd_arm(target)

    def deploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> TargetDeploy:
        # An Application per namespace, named after its release; Argo CD posts its Events on
        # the Application.
        install = argocd_arm(target)
        desired = deploy_target_argocd(
            cluster, target, install, namespace, diff=self.diff, timeout=timeout, cancel=cancel
        )
        return TargetDeploy(
            desired,
            events_on=install.release,
            facts=(("chart", install.chart.describe()), ("sync", "automated, selfHeal, prune")),
            reached=("Synced", "Healthy"),
        )

    def undeploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float | None = None,
    ) -> bool:
        install = argocd_arm(target)
        return undeploy_argocd(
            cluster, namespace, release=install.release, timeout=timeout or DEPLOY_TIMEOUT_S
        )

    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        # What the trial's Application applies.
        install = argocd_arm(target)
        return target_argocd_desired(api, target, install, namespace)

    def target_what(self, target: Target) -> str:
        return f"argocd Application {argocd_arm(target).release}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        return target_argocd_app(cluster, target, argocd_arm(target), namespace)
