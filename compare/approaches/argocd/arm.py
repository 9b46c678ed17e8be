"""Any chart as the app under test, the Argo CD way: a target file's `argocd` key as an
Application that the real application controller syncs and self-heals.

It is deployed by the approach's one deploy path (`sync.deploy_chart_argocd`,
which deploys the built-in chart with a WebApp's values too); here is only what a target's chart
adds - where the repo-server fetches it:

- a local directory: published in the toolkit's own Helm repository on 127.0.0.1, served by
  Argo CD's chart server (`compare.deploy.chart_server.publish_chart`, a repository per
  digest of the chart's content, as for Flux);
- a repository URL + name + version: the Application's source names them as they are;
- an OCI reference: not supported yet (Argo CD needs a repository Secret with `enableOCI`
  for a Helm chart from an OCI registry) - one line naming the field.

The application controller runs with Argo CD's own cluster-wide role: no per-chart grant.

What Argo CD leaves when its Application is deleted (`left_by_argocd`: the chart's CRDs, of
`crds/` or its templates, and objects annotated to be kept) is left as Argo CD leaves it and
said once by `compare undeploy argocd`; a run deletes its trial namespaces itself (with the kept
objects in them) and, at its end, the CRDs it installed (`compare.run.preflight`).

The desired state is what the Application applies: the chart rendered with the target's
values as the repo-server renders it (`helm template`, hooks dropped), with Argo CD's tracking
annotation on every object (`compare.approaches.argocd.sync.chart_applied`) - the built-in's rule. A
chart that generates values at render time (a random password) renders differently each time
for Argo CD itself, and is not a chart this arm can judge.
"""

from __future__ import annotations

import threading
from typing import Any

from kubernetes import client

from compare.approaches.argocd.application import THREE_WAY_DIFF, read_application
from compare.approaches.argocd.controllers import ARGOCD
from compare.approaches.argocd.status import argocd_detail
from compare.approaches.argocd.sync import (
    ArgocdChart,
    chart_applied,
    deploy_chart_argocd,
    kept_by_argocd,
)
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.chart_server import publish_chart
from compare.deploy.chart_target import render_target, target_chart
from compare.deploy.charts import chart_crds
from compare.deploy.rows import DeployedApp, judged_row, unjudged
from compare.errors import EXIT_USAGE, CompareError
from compare.judge import DesiredObjects, with_api_defaults
from compare.kube.served import read as served_read
from compare.kube.served import served
from compare.target import HelmInstall, Target

APPROACH = "argocd"


def argocd_arm(target: Target) -> HelmInstall:
    """The target's `argocd` key: a one-line error naming the file when it has none, or the
    field when its chart's source is one the arm cannot deploy."""
    return _supported(target, target.chart_arm(APPROACH))


def _supported(target: Target, install: HelmInstall) -> HelmInstall:
    if install.drops:
        # The repo-server renders a Helm source with `helm template` and nothing after it. (An
        # APIService it kept would never be Healthy either: Argo CD's health of an APIService
        # is its Available condition, which no pod of the embedded cluster ever makes true.)
        raise CompareError(
            f"{target.source}: {install.where}.{install.drops[0]}: not possible with the"
            " argocd arm (Argo CD renders a Helm chart with no post-render step)",
            exit_code=EXIT_USAGE,
        )
    if install.disable_hooks:
        # Argo CD skips hooks only in a sync asked for with the `apply` strategy or of chosen
        # resources; its automated sync (the arm's: the initial one) runs every hook.
        raise CompareError(
            f"{target.source}: {install.where}.disableHooks: not possible with the argocd arm"
            " (Argo CD's automated sync runs a chart's hooks; it has no switch to skip them)",
            exit_code=EXIT_USAGE,
        )
    if install.chart.form == "oci":
        raise CompareError(
            f"{target.source}: {install.where}.chart.oci: an OCI chart is not supported by the"
            " argocd arm yet (give chart.path or chart.repo)",
            exit_code=EXIT_USAGE,
        )
    return install


def target_argocd_chart(
    cluster: ClusterTarget, target: Target, install: HelmInstall, namespace: str
) -> ArgocdChart:
    """The target's chart as its Application deploys it into `namespace`: rendered first (a
    chart that does not render, or a source Argo CD cannot take, changes nothing)."""
    chart = _supported(target, install).chart
    rendered = render_target(target, install, namespace)
    if chart.form == "path":
        assert chart.path is not None
        path = chart.path
        metadata = target_chart(target, install).metadata
        root = ARGOCD.state_dir(cluster) / "repo"

        def source(url: str) -> dict[str, Any]:
            # Published once the chart server runs: its directory is rewritten at its start.
            published = publish_chart(root, url, path)
            return {
                "repoURL": published,
                "chart": metadata.name,
                "targetRevision": metadata.version,
            }

    else:

        def source(url: str) -> dict[str, Any]:
            return {
                "repoURL": str(chart.repo),
                "chart": str(chart.name),
                "targetRevision": str(chart.version),
            }

    return ArgocdChart(
        release=install.release,
        values=dict(install.values),
        source=source,
        rendered=rendered,
        what=f"Application {install.release}",
    )


def deploy_target_argocd(
    cluster: ClusterTarget,
    target: Target,
    install: HelmInstall,
    namespace: str,
    *,
    diff: str = THREE_WAY_DIFF,
    timeout: float = DEPLOY_TIMEOUT_S,
    cancel: threading.Event | None = None,
) -> DesiredObjects:
    """The target's Application, Synced, Healthy and holding; returns its desired state."""
    chart = target_argocd_chart(cluster, target, install, namespace)
    return deploy_chart_argocd(cluster, chart, namespace, timeout=timeout, diff=diff, cancel=cancel)


def target_argocd_desired(
    api: client.ApiClient, target: Target, install: HelmInstall, namespace: str
) -> DesiredObjects:
    """What the target's Application applies in `namespace`, defaulted."""
    rendered = render_target(target, install, namespace)
    return with_api_defaults(api, namespace, chart_applied(rendered, namespace, install.release))


def target_argocd_app(
    cluster: ClusterTarget, target: Target, install: HelmInstall, namespace: str
) -> DeployedApp | None:
    """The `compare status` row of an Application (None: there is none; the toolkit names it
    after its release): its sync and health and last self-heal, judged closed-world against
    what it applies (a chart that does not render with its values: a row saying so)."""
    api = cluster.api_client()
    try:
        app = read_application(api, namespace, install.release)
        if app is None:
            return None
        detail = argocd_detail(api, app)
        try:
            rendered = render_target(target, install, namespace)
        except CompareError as exc:
            state = f"values do not render: {exc.message}"
            return unjudged(APPROACH, install.release, namespace, detail, state)
        applied = chart_applied(rendered, namespace, install.release)
        return judged_row(
            api,
            approach=APPROACH,
            name=install.release,
            namespace=namespace,
            detail=detail,
            desired=with_api_defaults(api, namespace, applied),
        )
    finally:
        api.close()


def left_by_argocd(
    cluster: ClusterTarget, target: Target, install: HelmInstall, namespace: str
) -> list[str]:
    """What of the target's chart is still in the cluster although Argo CD deletes its
    Application's objects: the ones its own rule keeps (`kept_by_argocd`), one entry each,
    with why (empty: nothing)."""
    try:
        chart = target_chart(target, install)
        objects = [*chart_crds(chart), *render_target(target, install, namespace)]
    except CompareError:
        return []  # a chart that no longer renders: nothing to tell from it
    kept = [(obj, why) for obj in objects if (why := kept_by_argocd(obj)) is not None]
    api = cluster.api_client()
    try:
        left = []
        for obj, why in kept:
            what = served(api, str(obj.get("apiVersion")), str(obj.get("kind")))
            meta = obj.get("metadata") or {}
            where = (meta.get("namespace") or namespace) if what and what.namespaced else None
            if what is not None and served_read(api, what, where, str(meta.get("name"))):
                named = f"{where}/{meta.get('name')}" if where else str(meta.get("name"))
                left.append(f"{obj.get('kind')} {named} ({why})")
        return left
    finally:
        api.close()
