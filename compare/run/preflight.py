"""Before a run's target trials: each arm deployed once, and what trials may share.

The chart arms (helm, flux) are deployed once in a namespace of their own and judged: a chart
whose desired state cannot be reached stops the run after that one deploy, with the judge's
diagnosis, instead of one `error` per trial after a full deploy timeout each. Their manifests
also tell whether two trials can run side by side (`compare.run.sharing`).

The operator arm: the target's operator installed (or checked) and tried once.

An operator's children are only known once it has made them, yet which faults apply to the
app (`compare.run.workload`) must be known before the trials are planned. So the run first
checks every custom resource's kind (one line, nothing applied, when nobody serves it),
installs the operator as the target says, and deploys the custom resources once in a
namespace of its own: ready, baseline taken, its parts derived - then that namespace goes.
An operator that never gets ready is one line after the deploy timeout, with what the
preflight installed removed again: no trial starts and the cluster is left as it was.
"""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Sequence

from kubernetes import client

from compare import approaches as registry
from compare import kube
from compare.approaches import Approach
from compare.cluster import ClusterTarget
from compare.deploy.helm import chart_crds
from compare.deploy.helm_arm import render_target, target_chart
from compare.deploy.operator_arm import (
    Install,
    check_served,
    deploy_resources,
    install,
    operator_arm,
    plan_install,
    remove_resources,
    uninstall,
)
from compare.errors import CompareError
from compare.judge import REQUEST_TIMEOUT
from compare.kube.apierror import status_message
from compare.run.sharing import cannot_share
from compare.run.workload import OWNED, Workload, workload_of
from compare.target import Target, release_in

# The namespace an operator's install puts unnamespaced objects in, when the target names none.
INSTALL_NAMESPACE = "webapp"
PREFIX = "cmp-op-preflight"


def preflight_operator(
    cluster: ClusterTarget,
    target: Target,
    *,
    timeout: float,
    warn: Callable[[str], None] | None = None,
) -> tuple[Install, Workload]:
    """Install the target's operator and deploy its resources once: what the run installed
    (removed at its end) and the app's parts. On failure, the install is removed again.
    `warn` gets what its baseline keeps of other field managers' writes."""
    operator = operator_arm(target)
    namespace = target.namespace or INSTALL_NAMESPACE
    check_served(cluster, target, operator, namespace)
    plan = plan_install(cluster, target, operator, namespace)
    try:
        if plan.form == "kustomize":
            plan.namespace_created = _create(cluster, namespace)
        install(cluster, target, operator, plan, timeout=timeout)
        scratch = f"{PREFIX}-{secrets.token_hex(3)}"
        _create(cluster, scratch)
        try:
            desired = deploy_resources(
                cluster, target, operator, scratch, timeout=timeout, warn=warn
            )
        finally:
            try:
                remove_resources(cluster, target, operator, scratch, timeout=timeout)
            finally:
                _delete(cluster, scratch)
    except BaseException as exc:
        # The first error is the one to tell.
        with contextlib.suppress(CompareError):
            uninstall(cluster, target, operator, plan, created_only=True)
        if isinstance(exc, CompareError):
            raise CompareError(
                f"preflight of the operator arm: {exc.message}; removed what it installed",
                exit_code=exc.exit_code,
            ) from None
        raise
    objects = [item.raw for item in desired.items]
    return plan, workload_of(objects) if operator.toolkit else workload_of(objects, source=OWNED)


def _create(cluster: ClusterTarget, namespace: str) -> bool:
    """Create the namespace; whether it was created here (False: it was there)."""
    api = cluster.api_client()
    try:
        return kube.ensure_namespace(api, namespace)
    finally:
        api.close()


def _delete(cluster: ClusterTarget, namespace: str) -> None:
    api = cluster.api_client()
    try:
        kube.delete_namespace(api, namespace)
    finally:
        api.close()


# -- the chart arms (helm, flux) ---------------------------------------------------------------

CHART_PREFIX = "cmp-chart-preflight"
# Two trial-like namespaces the manifest is rendered for, to find what two trials would share.
SHARE_PROBES = ("cmp-share-a", "cmp-share-b")


def chart_sharing(target: Target, approaches: Sequence[str]) -> list[str]:
    """Why the target's chart arms cannot run two trials side by side (empty: they can),
    from their manifests rendered as two trials would install them (`compare.run.sharing`).
    The toolkit's own chart (`own_chart`) makes nothing outside its namespace: they can."""
    if target.own_chart:
        return []
    reasons: list[str] = []
    for name in approaches:
        if not registry.get(name).charted:
            continue
        install = registry.get(name).chart_arm(target)
        probes = [release_in(install, ns) for ns in SHARE_PROBES]
        first, second = (
            render_target(target, probe, ns) for probe, ns in zip(probes, SHARE_PROBES, strict=True)
        )
        # Named as the user knows them: the release name, not a probe's suffixed one.
        reasons.extend(
            reason.replace(probes[0].release, install.release)
            for reason in cannot_share(first, second)
        )
    return list(dict.fromkeys(reasons))


def preflight_chart(
    cluster: ClusterTarget,
    target: Target,
    approach: Approach,
    *,
    timeout: float,
) -> None:
    """Deploy the target's chart arm once, in a namespace of its own, and wait until its
    desired state holds; then remove it. A chart whose desired state cannot be reached stops
    the run here, after one deploy, with the judge's diagnosis (which object, which field)."""
    approach.chart_arm(target)  # one line naming the key when the target has none
    scratch = f"{CHART_PREFIX}-{secrets.token_hex(3)}"
    _create(cluster, scratch)
    try:
        approach.deploy_target(cluster, target.for_trial(scratch), scratch, timeout=timeout)
    except CompareError as exc:
        raise CompareError(
            f"preflight of the {approach.name} arm: {exc.message} (one deploy, before any trial:"
            " no trial can hold this state)",
            exit_code=exc.exit_code,
        ) from None
    finally:
        with contextlib.suppress(CompareError, client.ApiException):
            approach.undeploy_target(cluster, target.for_trial(scratch), scratch, timeout=timeout)
        with contextlib.suppress(client.ApiException):
            _delete(cluster, scratch)


def new_chart_crds(cluster: ClusterTarget, target: Target, approaches: Sequence[str]) -> list[str]:
    """The CRDs of the chart arms' crds/ directories that the cluster does not have yet.

    Helm installs a chart's crds/ once and never removes them; the run that made them installed
    removes them again at its end (`remove_crds`), so that it leaves nothing behind."""
    names: list[str] = []
    for name in approaches:
        if registry.get(name).charted:
            chart = target_chart(target, registry.get(name).chart_arm(target))
            names += [str((crd.get("metadata") or {}).get("name")) for crd in chart_crds(chart)]
    api = cluster.api_client()
    try:
        extensions = client.ApiextensionsV1Api(api)
        absent = []
        for name in dict.fromkeys(names):
            try:
                extensions.read_custom_resource_definition(name, _request_timeout=REQUEST_TIMEOUT)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise CompareError(
                        f"reading CustomResourceDefinition {name} failed:"
                        f" {exc.status} {status_message(exc) or exc.reason}"
                    ) from None
                absent.append(name)
        return absent
    finally:
        api.close()


def remove_crds(cluster: ClusterTarget, names: Sequence[str]) -> list[str]:
    """Delete the CRDs the run installed; what could not be deleted, one line each."""
    if not names:
        return []
    left = []
    api = cluster.api_client()
    try:
        extensions = client.ApiextensionsV1Api(api)
        for name in names:
            try:
                extensions.delete_custom_resource_definition(name, _request_timeout=REQUEST_TIMEOUT)
            except client.ApiException as exc:
                if exc.status != 404:
                    left.append(f"CustomResourceDefinition {name}: {exc.status} {exc.reason}")
    finally:
        api.close()
    return left
