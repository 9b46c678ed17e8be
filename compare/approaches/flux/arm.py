"""Any chart as the app under test, the Flux way: a target file's `flux` key as a HelmRelease
that the real helm-controller installs and keeps (drift detection enabled).

The chart's source, by the form the target gives it:

- a local directory: published in the toolkit's own Helm repository on 127.0.0.1
  (`compare.deploy.chart_server`, where charts/webapp is served too), named by a HelmRepository;
- a repository URL + name + version: a HelmRepository for that URL, the HelmRelease's chart
  template names the chart and version;
- an OCI reference: an OCIRepository (source.toolkit.fluxcd.io/v1, served by the pinned
  source-controller) for `oci://registry/path/chart` at the given version (a tag; without
  one, the highest semver tag, as `helm` picks), its Helm chart layer copied as is, and the
  HelmRelease's `chartRef` naming it - the way helm-controller v1.x recommends over the older
  HelmRepository `type: oci`.

helm-controller runs under a least-privilege identity (`compare.approaches.flux.install`); a chart
may render any kind the judge knows, so before it is installed helm-controller is granted, by a
ClusterRole named by a digest of its rules, read-write on exactly the kinds the chart renders
plus every rule of the Roles and ClusterRoles it renders (Kubernetes lets a subject create a
role only with permissions it holds itself).

With `dropUnservedWebhooks` the HelmRelease carries a post-renderer of helm-controller's own (a
kustomize patch `$patch: delete` per object) that leaves the chart's fail-closed webhook
configurations served by its own pods out of the release (`compare.deploy.code_pods`); with
`dropUnservedAPIServices` likewise its APIServices served by its own pods. With
`disableHooks` helm-controller never runs the chart's hooks: `disableHooks` of the HelmRelease's
install, upgrade, rollback and uninstall (helm's `--no-hooks`; its tests are off by default).

The desired state is the helm arm's: every object of the release's manifest (read from Helm's
release record, which helm-controller writes in the namespace; for the toolkit's own chart, the
built-in WebApp's, its rendering, which is what it installs), hooks dropped, with the origin
labels helm-controller adds to every object.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from kubernetes import client

from compare.approaches.flux.controllers import (
    DEFAULT_INTERVAL_S,
    FIELD_MANAGER,
    HELM_RELEASES,
    POLL_S,
    format_interval,
    read_custom,
    read_helm_release,
    start_flux,
    wait_helm_release_ready,
)
from compare.approaches.flux.install import (
    CHART_ROLE_LABEL,
    FLUX_NAMESPACE,
    HELM_CONTROLLER,
    ROLE_PREFIX,
)
from compare.approaches.flux.status import flux_detail
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.chart_server import publish_chart
from compare.deploy.chart_target import (
    desired_of,
    release_desired,
    render_target,
    rendering,
    target_chart,
)
from compare.deploy.charts import chart_crds, release_objects
from compare.deploy.code_pods import left_out
from compare.deploy.install import apply_documents, bound_cluster_role
from compare.deploy.live import wait_for_desired_state
from compare.deploy.ownership import flux_applied
from compare.deploy.processes import ProcessSet
from compare.deploy.rows import DeployedApp, judged_row, unjudged
from compare.errors import EXIT_FAILED, CompareError
from compare.judge import REQUEST_TIMEOUT, DesiredObjects
from compare.kube import Deadline, ensure_namespace, wait_for, wait_until_gone
from compare.kube.apierror import delete_if_found
from compare.kube.served import Served
from compare.target import HelmInstall, Target

SOURCE_GROUP = "source.toolkit.fluxcd.io"
SOURCES = {
    kind: Served(f"{SOURCE_GROUP}/v1", kind, plural, namespaced=True)
    for kind, plural in (
        ("HelmRepository", "helmrepositories"),
        ("OCIRepository", "ocirepositories"),
    )
}
# The media type of a Helm chart's content layer in an OCI artifact.
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
RBAC_WAIT_S = 15.0


def flux_arm(target: Target) -> HelmInstall:
    """The target's `flux` key (a one-line error naming the file when it has none)."""
    return target.chart_arm("flux")


def source_name(install: HelmInstall) -> str:
    """The HelmRepository / OCIRepository of a release: named after it (one per release)."""
    return f"{install.release}-chart"


def chart_source(
    target: Target, install: HelmInstall, namespace: str, flux: ProcessSet
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The source object and the HelmRelease's chart part (`chart` or `chartRef`). A local
    chart is published on the toolkit's chart server (`flux`: the running processes)."""
    chart = install.chart
    meta = {"name": source_name(install), "namespace": namespace}
    if chart.form == "oci":
        ref = {"tag": chart.version} if chart.version else {"semver": "*"}
        source = {
            "apiVersion": f"{SOURCE_GROUP}/v1",
            "kind": "OCIRepository",
            "metadata": meta,
            "spec": {
                "url": chart.oci,
                "ref": ref,
                "interval": "10m",
                "layerSelector": {"mediaType": HELM_CHART_LAYER, "operation": "copy"},
            },
        }
        return source, {"chartRef": {"kind": "OCIRepository", "name": meta["name"]}}
    if chart.form == "path":
        if flux.repository_url is None:
            raise CompareError(
                "the Flux chart server has no URL recorded: run `compare deploy flux`"
            )
        assert chart.path is not None
        url = publish_chart(flux.state_dir / "repo", flux.repository_url, chart.path)
        metadata = target_chart(target, install).metadata
        name, version = metadata.name, metadata.version
    else:
        url, name, version = str(chart.repo), str(chart.name), str(chart.version)
    source = {
        "apiVersion": f"{SOURCE_GROUP}/v1",
        "kind": "HelmRepository",
        "metadata": meta,
        "spec": {"url": url, "interval": "10m"},
    }
    template = {
        "spec": {
            "chart": name,
            "version": version,
            "sourceRef": {"kind": "HelmRepository", "name": meta["name"]},
            "interval": "10m",
        }
    }
    return source, {"chart": template}


def helm_release_object(
    install: HelmInstall,
    namespace: str,
    chart: dict[str, Any],
    *,
    interval: float,
    drop: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The HelmRelease: the target's values, drift detection enabled, failures not retried;
    the rendered objects `drop` left out of the release by helm-controller's own post-renderer
    (a kustomize patch deleting each: `$patch: delete`); `disableHooks`: no hook of any of
    helm-controller's actions runs."""
    spec: dict[str, Any] = {
        "interval": format_interval(interval),
        "releaseName": install.release,
        **chart,
        "driftDetection": {"mode": "enabled"},
        # A failed install is reported, not retried: a bad value stays a clear failure.
        "install": {"remediation": {"retries": 0}},
        "upgrade": {"remediation": {"retries": 0}},
    }
    if install.disable_hooks:
        for action in ("install", "upgrade", "rollback", "uninstall"):
            spec.setdefault(action, {})["disableHooks"] = True
    if install.values:
        spec["values"] = json.loads(json.dumps(dict(install.values)))
    if drop:
        patches = []
        for obj in drop:
            name = str((obj.get("metadata") or {}).get("name"))
            head = {"apiVersion": obj.get("apiVersion"), "kind": obj.get("kind")}
            patch = {"$patch": "delete", **head, "metadata": {"name": name}}
            patches.append(
                {"patch": json.dumps(patch), "target": {"kind": head["kind"], "name": name}}
            )
        spec["postRenderers"] = [{"kustomize": {"patches": patches}}]
    return {
        "apiVersion": "helm.toolkit.fluxcd.io/v2",
        "kind": "HelmRelease",
        "metadata": {"name": install.release, "namespace": namespace},
        "spec": spec,
    }


def resource_of(kind: str) -> str:
    """The API resource of a kind the judge knows (its lower-case plural)."""
    lower = kind.lower()
    if lower.endswith("y"):
        return lower[:-1] + "ies"
    return lower + ("es" if lower.endswith("s") else "s")


def chart_rules(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What helm-controller needs for these objects: read-write on each kind, every rule of
    each Role and ClusterRole among them (to create a role one must hold its rules), and
    `bind` on each role a binding among them names that they do not hold (a cluster's own,
    `system:auth-delegator`: to bind a role one must hold its rules or `bind` on it)."""
    kinds: dict[str, set[str]] = {}
    granted: list[dict[str, Any]] = []
    rendered = {
        (str(obj.get("kind")), str((obj.get("metadata") or {}).get("name")))
        for obj in objects
        if obj.get("kind") in ("Role", "ClusterRole")
    }
    bound: dict[str, set[str]] = {}  # roles, clusterroles -> names
    # A custom resource's plural is its CRD's (crds/ or rendered), not a guess from its kind.
    plurals = {
        (str(spec.get("group")), str((spec.get("names") or {}).get("kind"))): str(
            (spec.get("names") or {}).get("plural")
        )
        for obj in objects
        if obj.get("kind") == "CustomResourceDefinition"
        and (spec := obj.get("spec") or {}).get("names")
    }
    for obj in objects:
        api_version = str(obj.get("apiVersion"))
        group = api_version.split("/")[0] if "/" in api_version else ""
        kind = str(obj.get("kind"))
        kinds.setdefault(group, set()).add(plurals.get((group, kind)) or resource_of(kind))
        if obj.get("kind") in ("Role", "ClusterRole"):
            granted += [rule for rule in obj.get("rules") or [] if rule not in granted]
        ref = obj.get("roleRef") or {}
        role = (str(ref.get("kind")), str(ref.get("name")))
        bindable = role[0] in ("Role", "ClusterRole") and role not in rendered
        if kind.endswith("RoleBinding") and bindable:
            bound.setdefault(resource_of(role[0]), set()).add(role[1])
    verbs = ["get", "list", "watch", "create", "update", "patch", "delete"]
    rules = [
        {"apiGroups": [group], "resources": sorted(resources), "verbs": verbs}
        for group, resources in sorted(kinds.items())
    ]
    binds = [
        {
            "apiGroups": ["rbac.authorization.k8s.io"],
            "resources": [resource],
            "verbs": ["bind"],
            "resourceNames": sorted(names),
        }
        for resource, names in sorted(bound.items())
    ]
    return rules + granted + binds


def chart_role(objects: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A ClusterRole and its binding to helm-controller, named by a digest of the rules (the
    same chart in every trial applies the same role)."""
    rules = chart_rules(objects)
    digest = hashlib.sha256(json.dumps(rules, sort_keys=True).encode()).hexdigest()[:10]
    name = f"{ROLE_PREFIX}{HELM_CONTROLLER}-chart-{digest}"
    role, binding = bound_cluster_role(
        name, rules, HELM_CONTROLLER, FLUX_NAMESPACE, labels={CHART_ROLE_LABEL: "true"}
    )
    return role, binding


def _wait_granted(api: client.ApiClient, rules: list[dict[str, Any]], namespace: str) -> None:
    """Until the API server's authorizer lets helm-controller create what the chart renders
    (a just-applied binding reaches it within moments; an install is not retried)."""
    checks = [
        (rule["apiGroups"][0], resource) for rule in rules[:1] for resource in rule["resources"]
    ]
    deadline = Deadline(RBAC_WAIT_S)
    for group, resource in checks:
        if not _granted(api, group, resource, namespace, deadline):
            return  # not ours to check on this cluster: the install tells


def _granted(
    api: client.ApiClient, group: str, resource: str, namespace: str, deadline: Deadline
) -> bool:
    """Until helm-controller may create `resource`; False when we may not ask (403)."""
    review = client.V1SubjectAccessReview(
        spec=client.V1SubjectAccessReviewSpec(
            user=f"system:serviceaccount:{FLUX_NAMESPACE}:{HELM_CONTROLLER}",
            groups=["system:serviceaccounts", f"system:serviceaccounts:{FLUX_NAMESPACE}"],
            resource_attributes=client.V1ResourceAttributes(
                group=group, resource=resource, verb="create", namespace=namespace
            ),
        )
    )
    authz = client.AuthorizationV1Api(api)

    def allowed() -> bool | None:
        try:
            found = authz.create_subject_access_review(review, _request_timeout=REQUEST_TIMEOUT)
        except client.ApiException as exc:
            if exc.status == 403:
                return None
            raise
        return bool(found.status.allowed)

    answer = wait_for(
        allowed,
        deadline=deadline,
        done=lambda look: look is not False,
        timed_out=lambda _look: CompareError(
            f"helm-controller was not granted create on {resource} within {RBAC_WAIT_S:.0f}s",
            exit_code=EXIT_FAILED,
        ),
        interval=POLL_S,
    )
    return answer is not None


def deploy_target_flux(
    cluster: ClusterTarget,
    target: Target,
    install: HelmInstall,
    namespace: str,
    *,
    interval: float = DEFAULT_INTERVAL_S,
    timeout: float = DEPLOY_TIMEOUT_S,
    cancel: threading.Event | None = None,
) -> DesiredObjects:
    """Render (a chart that does not render changes nothing), start Flux when needed, grant
    helm-controller the chart's kinds, apply the source and the HelmRelease; wait until it is
    Ready and every object of its release's manifest holds. Returns that desired state."""
    started = time.monotonic()
    rendered = render_target(target, install, namespace)
    # `dropUnservedWebhooks`, `dropUnservedAPIServices`: what the arm leaves out, deleted by
    # helm-controller's post-render.
    whole = rendering(target, install, namespace, as_installed=False)
    dropped = set(left_out(whole, namespace, install.drops))
    drop = [
        obj
        for obj in whole
        if f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}" in dropped
    ]
    source, chart = chart_source(target, install, namespace, start_flux(cluster))
    docs = [source, helm_release_object(install, namespace, chart, interval=interval, drop=drop)]
    # helm-controller installs the chart's crds/ too (its default `install.crds: Create`).
    role, binding = chart_role([*rendered, *chart_crds(target_chart(target, install))])
    api = cluster.api_client()
    try:
        ensure_namespace(api, namespace)
        apply_documents(cluster, [role, binding], field_manager=FIELD_MANAGER)
        _wait_granted(api, role["rules"], namespace)
        apply_documents(cluster, docs, field_manager=FIELD_MANAGER)
        wait_helm_release_ready(
            api, namespace, install.release, timeout=timeout, started=started, cancel=cancel
        )
        if target.own_chart:
            # What it installs is the rendering: no need to read the release back.
            applied = flux_applied(rendered, release=install.release, namespace=namespace)
            desired = desired_of(api, namespace, applied)
        else:
            desired = release_desired(
                cluster, api, target, install, namespace, applied=flux_applied
            )
        left = Deadline(timeout, started=started).remaining(1.0)
        wait_for_desired_state(
            api,
            namespace,
            desired,
            timeout=left,
            what=f"HelmRelease {install.release}",
            cancel=cancel,
        )
    finally:
        api.close()
    return desired


def undeploy_target_flux(
    cluster: ClusterTarget,
    install: HelmInstall,
    namespace: str,
    *,
    timeout: float = DEPLOY_TIMEOUT_S,
) -> bool:
    """Delete the HelmRelease (helm-controller uninstalls the release, its cluster-scoped
    objects included) and its source; wait until both are gone. False: no HelmRelease."""
    api = cluster.api_client()
    try:
        if read_helm_release(api, namespace, install.release) is None:
            return False
        # Their finalizers are the controllers': they must run to finish the deletion.
        start_flux(cluster)
        started = time.monotonic()
        custom = client.CustomObjectsApi(api)
        source = SOURCES["OCIRepository" if install.chart.form == "oci" else "HelmRepository"]
        parts = [(HELM_RELEASES, install.release), (source, source_name(install))]
        for kind, name in parts:
            group, version = kind.api_version.split("/")
            delete_if_found(
                f"deleting {name} in {namespace} failed",
                custom.delete_namespaced_custom_object,
                group,
                version,
                namespace,
                kind.plural,
                name,
                _request_timeout=REQUEST_TIMEOUT,
            )

        def left() -> list[str]:
            return [
                f"{kind.kind} {name}"
                for kind, name in parts
                if read_custom(api, kind, namespace, name) is not None
            ]

        wait_until_gone(
            left,
            deadline=Deadline(timeout, started=started),
            timed_out=lambda still: CompareError(
                f"undeploying {namespace}/{install.release} through Flux: {still[0]} still"
                f" present after {timeout:.0f}s",
                exit_code=EXIT_FAILED,
            ),
            interval=POLL_S,
        )
        return True
    finally:
        api.close()


def target_flux_app(
    cluster: ClusterTarget, target: Target, install: HelmInstall, namespace: str
) -> DeployedApp | None:
    """The `compare status` row of a HelmRelease (None: there is none; the toolkit names it
    after its release): its Ready condition and last drift Event, judged closed-world against
    its release's manifest."""
    api = cluster.api_client()
    try:
        obj = read_helm_release(api, namespace, install.release)
        if obj is None:
            return None
        detail = flux_detail(api, obj)
        if release_objects(cluster, namespace, install.release) is None:
            state = "not installed by helm-controller yet"
            return unjudged("flux", install.release, namespace, detail, state)
        return judged_row(
            api,
            approach="flux",
            name=install.release,
            namespace=namespace,
            detail=detail,
            desired=release_desired(cluster, api, target, install, namespace, applied=flux_applied),
        )
    finally:
        api.close()
