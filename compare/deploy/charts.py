"""The Helm path: install, upgrade, render and uninstall charts/webapp through pyhelm3.

The functions are synchronous: each call runs pyhelm3's coroutines on its own event loop, so
several threads may deploy different releases at once. Helm renders and applies the chart once
per call; nothing here watches the objects afterwards - that is the point of the comparison.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import functools
import json
import logging
import re
import time
from collections.abc import Callable, Coroutine, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypeVar

import pyhelm3
from kubernetes import client
from pyhelm3 import errors as helm_errors

from compare.cluster import ClusterTarget, tool_path
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.chart_errors import helm_failure
from compare.deploy.post_render import dropping_helm
from compare.errors import EXIT_FAILED, CompareError
from compare.judge import judged_objects
from compare.judge.kinds import KINDS, WATCHED
from compare.kube import POLL_S, Deadline, check_namespace_name, wait_until_gone
from compare.target.builtin import BUILTIN_CHART
from compare.webapp import WebApp, chart_values

CHART_DIR = BUILTIN_CHART
CHART_NAME = "webapp"
DEFAULT_NAMESPACE = "webapp"

_RELEASE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# pyhelm3 logs every failed helm command as a warning; the failure is raised as a CompareError
# instead, so without a configured logging setup the warning must not reach stderr.
logging.getLogger("pyhelm3").addHandler(logging.NullHandler())

T = TypeVar("T")
Progress = Callable[[str], None]


@dataclass(frozen=True)
class HelmRelease:
    """One revision of a release; `objects`, when it was just installed: its manifest (what
    `helm upgrade --install` reported applying, hooks included)."""

    release: str
    namespace: str
    revision: int
    chart_version: str
    app_version: str | None
    status: str = "deployed"
    objects: tuple[dict[str, Any], ...] | None = field(default=None, compare=False, repr=False)


def check_release_name(release: str) -> None:
    if len(release) > 53 or not _RELEASE_NAME.match(release):
        raise CompareError(
            f"release {release!r}: must be a lower-case DNS name of at most 53 characters"
        )


# A helm process that reads (status, list, template, show chart) gets this long; one that waits
# (install, upgrade, uninstall: helm's own --timeout) gets its wait plus this margin.
HELM_TIMEOUT_S = 300.0
HELM_MARGIN_S = 60.0


def _run(coro: Coroutine[Any, Any, T], *, timeout: float = HELM_TIMEOUT_S) -> T:
    """Run a pyhelm3 coroutine to completion from synchronous code, in any thread, bounded:
    past `timeout` the task is cancelled, and pyhelm3 terminates its helm process on that."""

    async def bounded() -> T:
        try:
            return await asyncio.wait_for(coro, timeout)
        except TimeoutError:
            raise CompareError(
                f"helm did not finish within {timeout:g} s (stopped); is the cluster answering?"
            ) from None

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(bounded())
    # Called from inside an event loop (a kopf handler, a notebook): use a private thread.
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, bounded()).result()


@functools.cache
def _helm(kubeconfig: Path | None, context: str | None) -> pyhelm3.Client:
    # A client holds no event loop or connection, only the helm command line; sharing one per
    # cluster saves the `helm version` call its constructor makes.
    return pyhelm3.Client(executable=tool_path("helm"), kubeconfig=kubeconfig, kubecontext=context)


def _client(target: ClusterTarget, drop: tuple[str, ...] = ()) -> pyhelm3.Client:
    if drop:
        # Its `helm upgrade` leaves these objects out (`compare.deploy.post_render`).
        wrapper = dropping_helm(tool_path("helm"), drop)
        return _dropping(str(wrapper), target.kubeconfig, target.context)
    return _helm(target.kubeconfig, target.context)


@functools.cache
def _dropping(executable: str, kubeconfig: Path | None, context: str | None) -> pyhelm3.Client:
    return pyhelm3.Client(executable=executable, kubeconfig=kubeconfig, kubecontext=context)


@functools.cache
def get_chart(ref: str, *, repo: str | None = None, version: str | None = None) -> pyhelm3.Chart:
    """Any chart: a directory, a repository's chart (`repo` + name + `version`) or an OCI
    reference (`helm show chart`), read once per process. Raises a one-line CompareError."""
    try:
        return _run(_helm(None, None).get_chart(ref, repo=repo, version=version))
    except helm_errors.Error as exc:
        raise helm_failure(f"helm show chart {ref}", exc) from exc


def chart_crds(chart: pyhelm3.Chart) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions of a chart's crds/ directory (`helm show crds`), read
    once per process for each chart (as the chart itself: `get_chart`)."""
    key = (str(chart.ref), str(chart.repo), chart.metadata.version)
    if key not in _CRDS:
        try:
            _CRDS[key] = [dict(crd) for crd in _run(chart.crds()) if crd]
        except helm_errors.Error as exc:
            raise helm_failure(f"helm show crds {chart.ref}", exc) from exc
    return copy.deepcopy(_CRDS[key])


_CRDS: dict[tuple[str, str, str], list[dict[str, Any]]] = {}


def _release_of(revision: pyhelm3.ReleaseRevision, chart: pyhelm3.ChartMetadata) -> HelmRelease:
    return HelmRelease(
        release=revision.release.name,
        namespace=revision.release.namespace,
        revision=revision.revision,
        chart_version=chart.version,
        app_version=chart.app_version,
        status=revision.status.value,
    )


def _seconds(timeout: float) -> str:
    return f"{max(1, int(timeout))}s"


def install_or_upgrade(
    target: ClusterTarget,
    values: Mapping[str, Any],
    namespace: str,
    *,
    release: str,
    timeout: float = DEPLOY_TIMEOUT_S,
    chart: pyhelm3.Chart | None = None,
    drop: tuple[str, ...] = (),
    no_hooks: bool = False,
) -> HelmRelease:
    """`helm upgrade --install --force-conflicts` with these values (no waiting for pods);
    the objects `drop` names (`Kind/name`) left out of the release (a post-render filter);
    `no_hooks`: the chart's hooks never run (`--no-hooks`).

    A release left pending by an interrupted helm call is rolled back or removed first
    (pyhelm3's `get_proceedable_revision`), so a retry does not fail with "another operation
    is in progress". Schema violations raise `values: <field>: <problem>` (exit 2). `chart`
    (from `get_chart`) installs any chart instead of charts/webapp.
    """
    check_release_name(release)
    check_namespace_name(namespace)

    async def go(chart: pyhelm3.Chart) -> HelmRelease:
        helm = _client(target, drop)
        await helm.get_proceedable_revision(release, namespace=namespace, timeout=_seconds(timeout))
        revision = await helm.install_or_upgrade_release(
            release,
            chart,
            dict(values),
            namespace=namespace,
            create_namespace=True,
            # Helm 4 applies server-side: fields another manager changed (a `kubectl scale`,
            # a chaos action) would make the upgrade fail with a conflict. Re-deploying means
            # re-asserting the chart's desired state, so the release takes those fields back.
            force_conflicts=True,
            no_hooks=no_hooks,
            timeout=_seconds(timeout),
        )
        # The install's own report holds the manifest: no `helm get manifest` afterwards.
        objects = tuple(obj for obj in await revision.resources() if obj)
        return replace(_release_of(revision, chart.metadata), objects=objects)

    try:
        chosen = chart if chart is not None else get_chart(str(CHART_DIR))
        # Two waits of up to `timeout` (a pending revision's rollback, then the install).
        return _run(go(chosen), timeout=2 * timeout + HELM_MARGIN_S)
    except helm_errors.Error as exc:
        raise helm_failure(
            f"helm upgrade --install {release} (namespace {namespace})", exc
        ) from exc


def render(
    values: Mapping[str, Any],
    *,
    release: str,
    namespace: str = DEFAULT_NAMESPACE,
    chart: pyhelm3.Chart | None = None,
) -> list[dict[str, Any]]:
    """`helm template`: the objects the chart renders for these values (hooks included);
    `chart` (from `get_chart`) renders any chart instead of charts/webapp."""
    check_release_name(release)

    async def go(chart: pyhelm3.Chart) -> list[dict[str, Any]]:
        helm = _helm(None, None)  # `helm template` needs no cluster
        objects = await helm.template_resources(chart, release, dict(values), namespace=namespace)
        return [obj for obj in objects if obj]

    try:
        return _run(go(chart if chart is not None else get_chart(str(CHART_DIR))))
    except helm_errors.Error as exc:
        raise helm_failure(f"helm template {release}", exc) from exc


def webapp_manifest(
    webapp: WebApp, *, release: str | None = None, extra_values: Mapping[str, Any] | None = None
) -> list[dict[str, Any]]:
    """The objects a release of this WebApp keeps (hooks dropped): what the judge holds it to.

    Rendering is deterministic: a process renders each (values, release) once."""
    values = chart_values(webapp, extra_values)
    text = _manifest(json.dumps(values, sort_keys=True), release or webapp.name)
    objects: list[dict[str, Any]] = json.loads(text)
    return objects


@functools.lru_cache(maxsize=256)
def _manifest(values_json: str, release: str) -> str:
    return json.dumps(judged_objects(render(json.loads(values_json), release=release)))


async def _current(
    target: ClusterTarget, namespace: str, release: str
) -> pyhelm3.ReleaseRevision | None:
    """The release's current revision (None: no such release)."""
    try:
        return await _client(target).get_current_revision(release, namespace=namespace)
    except helm_errors.ReleaseNotFoundError:
        return None


def get_release(target: ClusterTarget, namespace: str, release: str) -> HelmRelease | None:
    """The current revision of a release, or None when there is no such release."""
    check_release_name(release)
    check_namespace_name(namespace)

    async def go() -> HelmRelease | None:
        revision = await _current(target, namespace, release)
        return None if revision is None else _release_of(revision, await revision.chart_metadata())

    try:
        return _run(go())
    except helm_errors.Error as exc:
        raise helm_failure(f"helm status {release}", exc) from exc


def release_objects(
    target: ClusterTarget, namespace: str, release: str
) -> list[dict[str, Any]] | None:
    """The objects the release's current revision applied (its manifest), None if no release."""

    async def go() -> list[dict[str, Any]] | None:
        revision = await _current(target, namespace, release)
        if revision is None:
            return None
        try:
            return [obj for obj in await revision.resources() if obj]
        except KeyError:  # a release of a chart that rendered nothing has no manifest
            return []

    try:
        return _run(go())
    except helm_errors.Error as exc:
        raise helm_failure(f"helm get manifest {release}", exc) from exc


def list_releases(target: ClusterTarget, namespace: str | None = None) -> list[HelmRelease]:
    """Releases of charts/webapp in `namespace` (every namespace when None), any status."""

    async def go() -> Iterable[dict[str, Any]]:
        helm = _client(target)
        return await helm.list_release_definitions(
            all_namespaces=namespace is None,
            namespace=namespace,
            include_deployed=True,
            include_failed=True,
            include_pending=True,
            include_uninstalling=True,
        )

    try:
        found = _run(go())
    except helm_errors.Error as exc:
        raise helm_failure("helm list", exc) from exc
    releases = []
    for item in found:
        chart, _, version = str(item.get("chart", "")).rpartition("-")
        if chart != CHART_NAME:
            continue
        releases.append(
            HelmRelease(
                release=item["name"],
                namespace=item["namespace"],
                revision=int(item["revision"]),
                chart_version=version,
                app_version=item.get("app_version") or None,
                status=str(item.get("status", "unknown")),
            )
        )
    return sorted(releases, key=lambda r: (r.namespace, r.release))


def _exists(api: client.ApiClient, obj: Mapping[str, Any], namespace: str) -> bool:
    kind = obj.get("kind")
    name = (obj.get("metadata") or {}).get("name")
    # What a trial watches (the workload, its Service, its ReplicaSets and pods) is waited for.
    if str(kind) not in WATCHED or not name:
        return False
    try:
        KINDS[str(kind)].read_call(api)(name, namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise CompareError(f"reading {kind} {namespace}/{name} failed: {exc.reason}") from exc
    return True


def _leftover_pods(api: client.ApiClient, namespace: str, selector: Mapping[str, str]) -> int:
    label_selector = ",".join(f"{k}={v}" for k, v in sorted(selector.items()))
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=label_selector)
    return len(pods.items)


def undeploy_helm(
    target: ClusterTarget,
    namespace: str,
    *,
    release: str,
    timeout: float = DEPLOY_TIMEOUT_S,
    on_progress: Progress | None = None,
    no_hooks: bool = False,
) -> None:
    """`helm uninstall` (`no_hooks`: its delete hooks never run, `--no-hooks`), then wait
    until every object of the release and its pods are gone.

    Removing a release that does not exist is not an error (there is nothing to wait for).
    """
    check_release_name(release)
    check_namespace_name(namespace)
    objects = release_objects(target, namespace, release)
    if objects is None:
        return
    if on_progress is not None:
        on_progress(f"helm uninstall {release}")
    started = time.monotonic()

    async def go() -> None:
        helm = _client(target)
        await helm.uninstall_release(
            release, namespace=namespace, no_hooks=no_hooks, timeout=_seconds(timeout)
        )

    try:
        _run(go(), timeout=timeout + HELM_MARGIN_S)
    except helm_errors.Error as exc:
        raise helm_failure(f"helm uninstall {release} (namespace {namespace})", exc) from exc
    selectors = [
        ((obj.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        for obj in objects
        if obj.get("kind") == "Deployment"
    ]
    api = target.api_client()

    def left() -> list[str]:
        still = [
            f"{obj['kind']} {obj['metadata']['name']}"
            for obj in objects
            if _exists(api, obj, namespace)
        ]
        pods = sum(_leftover_pods(api, namespace, sel) for sel in selectors if sel)
        if pods:
            still.append(f"{pods} pod(s)")
        if still and on_progress is not None:
            on_progress(f"waiting for {', '.join(still)} to go")
        return still

    try:
        wait_until_gone(
            left,
            deadline=Deadline(timeout, started=started),
            timed_out=lambda still: CompareError(
                f"helm release {namespace}/{release}: {', '.join(still)} still present "
                f"{timeout:.0f}s after uninstall",
                exit_code=EXIT_FAILED,
            ),
            interval=POLL_S,
        )
    finally:
        api.close()
