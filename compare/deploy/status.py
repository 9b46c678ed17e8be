"""What is deployed, per approach: Helm releases of charts/webapp and WebApp custom resources.

Each row says what the approach wants (the release's applied manifest, or the CR's spec) and
what runs (the live Deployment), judged by the shared `compare_live`: a drifted Helm release
shows here as drifted until someone runs `helm upgrade` again.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client
from pydantic import ValidationError

from compare.cluster import ClusterTarget
from compare.deploy.helm import list_releases, release_objects
from compare.deploy.live import read_live
from compare.errors import CompareError
from compare.webapp import (
    API_GROUP,
    API_VERSION,
    CONTAINER_NAME,
    PLURAL,
    DesiredState,
    WebApp,
    compare_live,
    desired_state,
)
from compare.webapp.desired import COMPONENT

COMPONENT_LABEL = "app.kubernetes.io/component"


@dataclass(frozen=True)
class DeployedApp:
    """One deployed WebApp, as one approach manages it."""

    approach: str  # "helm" or "operator"
    name: str  # the release or the custom resource
    namespace: str
    detail: str  # release revision and status, or the CR's status.phase
    desired_replicas: int | None
    ready_replicas: int | None
    image: str | None
    state: str  # "holds", or what differs


def manifest_desired(objects: Sequence[Mapping[str, Any]]) -> DesiredState | None:
    """The desired state a release's applied manifest encodes (None without a Deployment)."""
    deployment = next((o for o in objects if o.get("kind") == "Deployment"), None)
    if deployment is None:
        return None
    spec = deployment.get("spec") or {}
    template = spec.get("template") or {}
    labels = (template.get("metadata") or {}).get("labels") or {}
    containers = (template.get("spec") or {}).get("containers") or [{}]
    main = next((c for c in containers if c.get("name") == CONTAINER_NAME), containers[0])
    ports = main.get("ports") or [{}]
    selector = dict((spec.get("selector") or {}).get("matchLabels") or {})
    return DesiredState(
        name=deployment["metadata"]["name"],
        replicas=int(spec.get("replicas", 1)),
        image=str(main.get("image")),
        port=int(ports[0].get("containerPort", 0)),
        env=tuple((e["name"], str(e.get("value", ""))) for e in main.get("env") or []),
        selector=selector,
        template_labels={**selector, COMPONENT_LABEL: labels.get(COMPONENT_LABEL, COMPONENT)},
    )


def _state(api: client.ApiClient, namespace: str, desired: DesiredState) -> tuple[int, str]:
    live = read_live(api, namespace, desired.name)
    ready = ((live.deployment or {}).get("status") or {}).get("readyReplicas") or 0
    found = compare_live(desired, live.deployment, live.service)
    return ready, "holds" if not found else f"drifted: {found[0]}"


def helm_apps(
    target: ClusterTarget, api: client.ApiClient, namespace: str | None
) -> list[DeployedApp]:
    apps = []
    for release in list_releases(target, namespace):
        detail = f"revision {release.revision}, {release.status}"
        objects = release_objects(target, release.namespace, release.release) or []
        desired = manifest_desired(objects)
        ready: int | None = None
        state = "no Deployment in the release"
        if desired is not None:
            ready, state = _state(api, release.namespace, desired)
        apps.append(
            DeployedApp(
                approach="helm",
                name=release.release,
                namespace=release.namespace,
                detail=detail,
                desired_replicas=desired.replicas if desired is not None else None,
                ready_replicas=ready,
                image=desired.image if desired is not None else None,
                state=state,
            )
        )
    return apps


def _list_crs(api: client.ApiClient, namespace: str | None) -> list[dict[str, Any]]:
    custom = client.CustomObjectsApi(api)
    try:
        if namespace is None:
            found = custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)
        else:
            found = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)
    except client.ApiException as exc:
        if exc.status == 404:
            return []  # the CRD is not installed: no WebApp can exist
        raise CompareError(f"listing WebApps failed: {exc.status} {exc.reason}") from exc
    items: list[dict[str, Any]] = found.get("items") or []
    return items


def operator_apps(api: client.ApiClient, namespace: str | None) -> list[DeployedApp]:
    apps = []
    for cr in _list_crs(api, namespace):
        meta = cr.get("metadata") or {}
        name, ns = str(meta.get("name")), str(meta.get("namespace"))
        status = cr.get("status") or {}
        spec = cr.get("spec") or {}
        detail = f"phase {status.get('phase') or 'unknown'}"
        ready: int | None = None
        try:
            webapp = WebApp.model_validate(
                {k: cr.get(k) for k in ("apiVersion", "kind", "metadata", "spec")}
            )
        except ValidationError:
            replicas, image, state = spec.get("replicas"), spec.get("image"), "invalid spec"
        else:
            desired = desired_state(webapp)
            replicas, image = desired.replicas, desired.image
            ready, state = _state(api, ns, desired)
        apps.append(
            DeployedApp(
                approach="operator",
                name=name,
                namespace=ns,
                detail=detail,
                desired_replicas=replicas,
                ready_replicas=ready,
                image=image,
                state=state,
            )
        )
    return sorted(apps, key=lambda a: (a.namespace, a.name))


def deployed_apps(target: ClusterTarget, namespace: str | None) -> list[DeployedApp]:
    """Every WebApp deployed through either approach in `namespace` (all when None)."""
    api = target.api_client()
    try:
        return helm_apps(target, api, namespace) + operator_apps(api, namespace)
    finally:
        api.close()
