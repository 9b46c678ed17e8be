"""The Argo CD path: a chart from the toolkit's local Helm repository, synced and self-healed
by the real Argo CD application controller (rendered by its repo-server).

    deploy_chart_argocd  start Argo CD when it is not running, apply a chart's Application
                         (automated sync, selfHeal, prune; the diff strategy asked for), wait
                         until Argo CD reports it Synced and Healthy and the judge finds the
                         chart's rendered manifest closed-world - the one deploy path, for a
                         target's `argocd` arm (`compare.approaches.argocd.arm`), the built-in
                         WebApp's included (`compare.target.builtin_target`)
    undeploy_argocd      delete the Application (Argo CD's finalizer deletes what it deployed);
                         wait until it and every object its status listed that Argo CD deletes
                         are gone (`kept_by_argocd`: what it never deletes is not waited for)
    last_self_heal   Argo CD's own record of its newest automated sync of just what drifted
                     (a self-heal): when it started, what it synced

The desired state is the helm approach's rendered manifest (`helm template`, as the repo-server
renders it) plus what Argo CD itself writes on every object it applies: its tracking
annotation (`argocd_applied`).
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.approaches.argocd.application import (
    SERVER_SIDE_DIFF,
    THREE_WAY_DIFF,
    apply_application,
    chart_application,
    delete_application,
    instance_name,
    read_application,
    wait_application,
)
from compare.approaches.argocd.controllers import start_argocd
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.charts import check_release_name
from compare.deploy.live import wait_for_desired_state
from compare.errors import EXIT_FAILED, EXIT_USAGE, CompareError
from compare.judge import DesiredObjects, judged_objects, with_api_defaults
from compare.kube import Deadline, check_namespace_name, ensure_namespace, wait_until_gone
from compare.kube.served import Served, served
from compare.kube.served import read as served_read

TRACKING_ID = "argocd.argoproj.io/tracking-id"
# What Argo CD never deletes when its Application is deleted (its controller's
# `shouldBeDeleted`): a CRD, an object whose sync options say `Delete=false`, and one Helm is
# told to keep (`helm.sh/resource-policy: keep`, which Argo CD honours too).
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
RESOURCE_POLICY = "helm.sh/resource-policy"
DIFF_STRATEGIES = (THREE_WAY_DIFF, SERVER_SIDE_DIFF)
POLL_S = 0.2


def tracking_id(application: str, obj: Mapping[str, Any], namespace: str) -> str:
    """Argo CD v3's annotation tracking (its default method): `<app>:<group>/<kind>:<ns>/<name>`,
    group empty for the core API."""
    api_version = str(obj.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    meta = obj.get("metadata") or {}
    where = f"{meta.get('namespace') or namespace}/{meta.get('name')}"
    return f"{application}:{group}/{obj.get('kind')}:{where}"


def argocd_applied(
    objects: Sequence[Mapping[str, Any]], *, application: str, namespace: str
) -> list[dict[str, Any]]:
    """The objects as the application controller applies them: each carries its tracking
    annotation (Argo CD's value wins over a chart's)."""
    applied = []
    for obj in objects:
        out = copy.deepcopy(dict(obj))
        meta = out.setdefault("metadata", {})
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            TRACKING_ID: tracking_id(application, obj, namespace),
        }
        applied.append(out)
    return applied


def chart_applied(
    rendered: Sequence[Mapping[str, Any]], namespace: str, release: str
) -> list[dict[str, Any]]:
    """What the Application `release` in `namespace` applies of a chart's rendered manifest
    (hooks dropped): every object, tracked."""
    return argocd_applied(
        judged_objects(rendered), application=instance_name(namespace, release), namespace=namespace
    )


def kept_by_argocd(obj: Mapping[str, Any]) -> str | None:
    """Why Argo CD leaves this object when its Application is deleted (None: it deletes it),
    by its controller's own rule: never a CRD (its custom resources would go with it, in every
    namespace), never one annotated `Delete=false` in its sync options or Helm's `keep`."""
    kind, api_version = obj.get("kind"), str(obj.get("apiVersion", ""))
    if kind == "CustomResourceDefinition" and api_version.startswith("apiextensions.k8s.io/"):
        return "Argo CD never deletes a CRD (every custom resource of it would go with it)"
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    # Comma-separated options, each trimmed, as Argo CD reads them.
    if "Delete=false" in _options(annotations.get(SYNC_OPTIONS)):
        return f"{SYNC_OPTIONS}: Delete=false"
    if "keep" in _options(annotations.get(RESOURCE_POLICY)):
        return f"{RESOURCE_POLICY}: keep"
    return None


def _options(value: Any) -> set[str]:
    return {item.strip() for item in str(value or "").split(",")}


def check_diff_strategy(strategy: str) -> None:
    if strategy not in DIFF_STRATEGIES:
        raise CompareError(
            f"--argocd-diff {strategy!r}: must be one of {', '.join(DIFF_STRATEGIES)}",
            exit_code=EXIT_USAGE,
        )


@dataclass(frozen=True)
class ArgocdChart:
    """A chart as an Application deploys it: where the repo-server fetches it (`source`: the
    toolkit's chart server URL -> repoURL, chart, targetRevision), its values, its release name,
    and its manifest rendered as the repo-server renders it (`helm template`)."""

    release: str
    values: Mapping[str, Any]
    source: Callable[[str], dict[str, Any]]
    rendered: Sequence[Mapping[str, Any]]
    what: str  # how a wait names it: "WebApp", "Application shop"


def deploy_chart_argocd(
    target: ClusterTarget,
    chart: ArgocdChart,
    namespace: str,
    *,
    timeout: float = DEPLOY_TIMEOUT_S,
    diff: str = THREE_WAY_DIFF,
    cancel: threading.Event | None = None,
) -> DesiredObjects:
    """Apply the chart's Application, wait until Argo CD has it Synced and Healthy and what it
    applies holds closed-world; returns that desired state. Starts Argo CD when it is not
    running. The one deploy path of the approach: the built-in WebApp and a target's chart."""
    check_release_name(chart.release)
    check_namespace_name(namespace)
    check_diff_strategy(diff)
    started = time.monotonic()
    handle = start_argocd(target)
    if handle.repository_url is None:
        raise CompareError("the Argo CD chart server has no URL recorded: start Argo CD again")
    app = chart_application(
        namespace,
        release=chart.release,
        source=chart.source(handle.repository_url),
        values=chart.values,
        diff=diff,
    )
    api = target.api_client()
    try:
        # Not Argo CD's CreateNamespace=true: then it would own the namespace.
        ensure_namespace(api, namespace)
        apply_application(target, app)
        wait_application(target, api, namespace, chart.release, timeout=timeout, cancel=cancel)
        desired = with_api_defaults(
            api, namespace, chart_applied(chart.rendered, namespace, chart.release)
        )
        left = Deadline(timeout, started=started).remaining(1.0)
        wait_for_desired_state(
            api, namespace, desired, timeout=left, what=chart.what, cancel=cancel
        )
    finally:
        api.close()
    return desired


def undeploy_argocd(
    target: ClusterTarget, namespace: str, *, release: str, timeout: float = DEPLOY_TIMEOUT_S
) -> bool:
    """Delete the Application; Argo CD deletes what it deployed first (its finalizer). Waits
    until the Application and every object its status listed that Argo CD deletes are gone;
    what it keeps (`kept_by_argocd`: a chart's CRDs, objects it is told to keep) is left as
    Argo CD leaves it, not waited for. False: there was no Application. The one undeploy path:
    the built-in WebApp's and a target's."""
    check_release_name(release)
    check_namespace_name(namespace)
    api = target.api_client()
    try:
        app = read_application(api, namespace, release)
        if app is None:
            return False
        start_argocd(target)  # the finalizer is the controller's: it must run
        started = time.monotonic()
        deployed = [
            (what, where, name)
            for what, where, name in _deployed(api, app, namespace)
            if kept_by_argocd(served_read(api, what, where, name) or {}) is None
        ]
        if not delete_application(target, api, namespace, release, timeout=timeout):
            return False

        def left() -> list[str]:
            return [
                f"{what.kind} {name}"
                for what, where, name in deployed
                if served_read(api, what, where, name) is not None
            ]

        wait_until_gone(
            left,
            deadline=Deadline(timeout, started=started),
            timed_out=lambda still: CompareError(
                f"undeploying {namespace}/{release} through Argo CD: {still[0]} still present "
                f"after {timeout:.0f}s",
                exit_code=EXIT_FAILED,
            ),
            interval=POLL_S,
        )
        return True
    finally:
        api.close()


def _deployed(
    api: client.ApiClient, app: Mapping[str, Any], namespace: str
) -> list[tuple[Served, str | None, str]]:
    """What the Application's status lists as deployed: (kind as served, namespace, name)."""
    found = []
    for resource in (app.get("status") or {}).get("resources") or []:
        group, version = resource.get("group") or "", resource.get("version") or "v1"
        api_version = f"{group}/{version}" if group else version
        what = served(api, api_version, str(resource.get("kind")))
        if what is not None:
            where = resource.get("namespace") or (namespace if what.namespaced else None)
            found.append((what, where, str(resource.get("name"))))
    return found


@dataclass(frozen=True)
class SelfHeal:
    """Argo CD's record of an automated sync of only some resources (what self-heal runs)."""

    started_at: str  # RFC 3339, whole seconds (Argo CD's precision)
    finished_at: str | None
    phase: str
    resources: list[str]  # "<Kind>/<name>"


def last_self_heal(api: client.ApiClient, namespace: str, release: str) -> SelfHeal | None:
    """The Application's newest automated selective sync (its operation state), None when its
    newest operation is not one (the initial full sync, or none yet)."""
    app = read_application(api, namespace, release)
    operation = ((app or {}).get("status") or {}).get("operationState") or {}
    spec = operation.get("operation") or {}
    resources = (spec.get("sync") or {}).get("resources") or []
    if not (spec.get("initiatedBy") or {}).get("automated") or not resources:
        return None
    return SelfHeal(
        started_at=str(operation.get("startedAt")),
        finished_at=operation.get("finishedAt"),
        phase=str(operation.get("phase")),
        resources=[f"{r.get('kind')}/{r.get('name')}" for r in resources],
    )
