"""What is deployed, per approach: Helm releases of charts/webapp and WebApp custom resources
(and the release of a target file's chart, `target_app`, or its custom resource,
`target_operator_app`).

Each row says what the approach wants (the release's applied manifest, the built-in chart's
rendering of a WebApp, or an operator's baseline) and whether it holds, by the shared
closed-world judge (`compare.judge`): a drifted Helm release shows here as drifted until
someone runs `helm upgrade` again.
"""

from __future__ import annotations

from pathlib import Path

from kubernetes import client
from pydantic import ValidationError

from compare.cluster import ClusterTarget
from compare.deploy import baseline
from compare.deploy.helm import get_release, list_releases, release_objects
from compare.deploy.helm_arm import release_desired
from compare.deploy.operator import WEBAPPS
from compare.deploy.operator_arm import webapp_desired
from compare.deploy.ownership import helm_applied
from compare.deploy.rows import DeployedApp, judged_app, judged_row
from compare.judge import (
    judged_objects,
)
from compare.kube import served as custom
from compare.target import HelmInstall, Operator, Target
from compare.target.builtin import builtin_operator
from compare.webapp import KIND, WebApp


def helm_apps(
    target: ClusterTarget, api: client.ApiClient, namespace: str | None
) -> list[DeployedApp]:
    apps = []
    for release in list_releases(target, namespace):
        detail = f"revision {release.revision}, {release.status}"
        objects = release_objects(target, release.namespace, release.release) or []
        if judged_objects(objects):
            # The release's applied manifest is the desired state, judged closed-world.
            app = judged_app(
                api,
                approach="helm",
                name=release.release,
                namespace=release.namespace,
                detail=detail,
                objects=helm_applied(
                    judged_objects(objects), release=release.release, namespace=release.namespace
                ),
            )
        else:
            app = DeployedApp(
                approach="helm",
                name=release.release,
                namespace=release.namespace,
                detail=detail,
                desired_replicas=None,
                ready_replicas=None,
                image=None,
                state="nothing in the release",
            )
        apps.append(app)
    return apps


def target_app(
    cluster: ClusterTarget, target: Target, install: HelmInstall, namespace: str
) -> DeployedApp | None:
    """The row of a target file's Helm release (None when it is not installed), judged
    closed-world against every object of the release's manifest (`release_desired`)."""
    release = get_release(cluster, namespace, install.release)
    if release is None:
        return None
    api = cluster.api_client()
    try:
        return judged_row(
            api,
            approach="helm",
            name=release.release,
            namespace=namespace,
            detail=f"revision {release.revision}, {release.status}",
            desired=release_desired(cluster, api, target, install, namespace),
        )
    finally:
        api.close()


def webapp_apps(cluster: ClusterTarget, namespace: str | None) -> list[DeployedApp]:
    """Every WebApp in `namespace` (all when None): each the toolkit operator's arm of a
    built-in target, its row `target_operator_app`'s; one whose spec does not validate,
    a row saying so."""
    apps = []
    api = cluster.api_client()
    try:
        crs = custom.listed(api, WEBAPPS, namespace)
    finally:
        api.close()
    for cr in crs:
        meta = cr.get("metadata") or {}
        name, ns = str(meta.get("name")), str(meta.get("namespace"))
        try:
            webapp = WebApp.model_validate(
                {k: cr.get(k) for k in ("apiVersion", "kind", "metadata", "spec")}
            )
        except ValidationError:
            spec = cr.get("spec") or {}
            phase = (cr.get("status") or {}).get("phase") or "unknown"
            app: DeployedApp | None = DeployedApp(
                approach="operator",
                name=name,
                namespace=ns,
                detail=f"phase {phase}",
                desired_replicas=spec.get("replicas"),
                ready_replicas=None,
                image=spec.get("image"),
                state="invalid spec",
            )
        else:
            target = Target(source=Path(KIND), name=name, namespace=ns)
            app = target_operator_app(cluster, target, builtin_operator(webapp), ns)
        apps.extend([app] if app is not None else [])
    return sorted(apps, key=lambda a: (a.namespace, a.name))


def target_operator_app(
    cluster: ClusterTarget, target: Target, operator: Operator, namespace: str
) -> DeployedApp | None:
    """The row of a target file's custom resource (its first; None when it is not there),
    judged closed-world against the baseline its deploy stored (`compare.deploy.baseline`),
    or - the toolkit's operator - against the built-in chart's rendering of its WebApps."""
    body = operator.resources[0]
    api = cluster.api_client()
    try:
        served = custom.served(api, str(body["apiVersion"]), str(body["kind"]))
        name = str(body["metadata"]["name"])
        live = custom.read(api, served, namespace, name) if served is not None else None
        if live is None:
            return None
        status = live.get("status") or {}
        shown, desired = f"{body['kind']}/{name}", None
        if operator.toolkit:
            # Named and described as the WebApp it is (its phase).
            shown, detail = name, f"phase {status.get('phase') or 'unknown'}"
            desired = webapp_desired(api, operator, namespace)
        else:
            conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
            ready = operator.ready_condition
            detail = f"{ready} {conditions.get(ready, 'absent')}" if ready else "ready: children"
            objects = baseline.load(api, namespace, target.name)
            desired = baseline.desired_of(objects) if objects is not None else None
        if desired is not None:
            return judged_row(
                api,
                approach="operator",
                name=shown,
                namespace=namespace,
                detail=detail,
                desired=desired,
            )
    finally:
        api.close()
    return DeployedApp(
        approach="operator",
        name=shown,
        namespace=namespace,
        detail=detail,
        desired_replicas=None,
        ready_replicas=None,
        image=None,
        state="no baseline (compare deploy operator --target FILE takes it)",
    )
