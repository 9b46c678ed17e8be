"""Any chart as the app under test: a target file's Helm approach rendered, installed, judged.

The desired state of a Helm app is every object of its release's manifest, hooks dropped
(`compare.judge.judged_objects`), made comparable by the judge's server-side dry-run - for any
chart and any kind the API server serves (its custom resources, an `APIService`), namespaced
or cluster-scoped. Before anything is installed
the chart is rendered (`helm template`, no cluster): a chart that does not render with the
target's values is one line naming the target file and helm's error. Once installed, the
release's own manifest is the desired state: a chart that generates values at render time (a
certificate, a random password) renders differently each time, so only what was applied is
what must hold; `render_changes` (two renders, before anything is installed) names the fields
that differ, for the approaches whose controller renders the chart anew (Argo CD). With
`dropUnservedWebhooks` the helm arm leaves the chart's fail-closed webhook configurations
served by its own pods out of the rendering, the install (a post-render filter) and so the
release's manifest (`compare.deploy.code_pods`, `compare.deploy.post_render`), and with
`dropUnservedAPIServices` likewise its APIServices served by its own pods; with
`disableHooks` it never runs the chart's hooks (`helm --no-hooks` at install, upgrade and
uninstall; a hook is never part of the desired state either way).
"""

from __future__ import annotations

import functools
import json
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pyhelm3
from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.deploy.charts import (
    DEFAULT_NAMESPACE,
    HelmRelease,
    get_chart,
    install_or_upgrade,
    release_objects,
    render,
    undeploy_helm,
)
from compare.deploy.code_pods import left_out
from compare.deploy.live import wait_for_desired_state
from compare.deploy.ownership import Applied, helm_applied
from compare.errors import EXIT_FAILED, EXIT_USAGE, CompareError
from compare.inputfile import parse_yaml, read_text
from compare.judge import (
    DesiredObjects,
    as_given,
    diff_object,
    judged_objects,
    with_api_defaults,
)
from compare.kube import check_namespace_name
from compare.target import API_VERSION, KIND, HelmInstall, Target


def _fail(target: Target, install: HelmInstall, exc: CompareError, *, usage: bool) -> CompareError:
    """A helm failure as a line of the target file: a values schema violation names the
    field (`compare.yaml: helm.values.logLevel: ...`), any other failure helm's error line.
    The built-in target (`own_chart`) has no target file: helm's line as it is."""
    if target.own_chart:
        return CompareError(exc.message, exit_code=EXIT_USAGE if usage else exc.exit_code)
    where, message = install.where, exc.message
    if message.startswith("values: "):
        where, message = f"{where}.values.{message.removeprefix('values: ')}", ""
    line = f"{target.source}: {where}: {message}" if message else f"{target.source}: {where}"
    return CompareError(line, exit_code=EXIT_USAGE if usage else exc.exit_code)


def target_chart(target: Target, install: HelmInstall) -> pyhelm3.Chart:
    """The chart a target names (directory, repository or OCI), read once per process."""
    chart = install.chart
    try:
        if chart.form == "path":
            return get_chart(str(chart.path))
        if chart.form == "repo":
            return get_chart(str(chart.name), repo=chart.repo, version=chart.version)
        return get_chart(str(chart.oci), version=chart.version)
    except CompareError as exc:
        raise _fail(target, install, exc, usage=True) from None


def target_namespace(target: Target, namespace: str | None) -> str:
    """The namespace a command works in: its own option, else the target's, else an error."""
    chosen = namespace or target.namespace
    if chosen is None:
        raise CompareError(f"{target.source}: namespace: not given (set it here or with -n)")
    check_namespace_name(chosen)
    return chosen


def render_target(target: Target, install: HelmInstall, namespace: str) -> list[dict[str, Any]]:
    """`helm template` of the target's chart with its values: the objects a release would keep
    (hooks dropped). A chart that does not render is a one-line CompareError (exit 2)."""
    kept = judged_objects(rendering(target, install, namespace))
    if not kept:
        # Helm would install an empty release that pyhelm3 cannot read back (no manifest):
        # nothing to deploy or judge, and nothing any command could then remove.
        raise CompareError(
            f"{target.source}: {install.where}: the chart renders no objects"
            " (nothing to deploy or judge; check its values and templates)"
        )
    return kept


def rendering(
    target: Target, install: HelmInstall, namespace: str, *, as_installed: bool = True
) -> list[dict[str, Any]]:
    """`helm template` of the target's chart with its values, every object (hooks included),
    as the arm installs it (`dropUnservedWebhooks`, `dropUnservedAPIServices`: without what
    they drop; `as_installed=False`: the chart's own rendering). A chart that does not render
    is a one-line CompareError (exit 2)."""
    objects = _rendered(target, install, namespace)
    return _installed(install, objects, namespace) if as_installed else objects


def _installed(
    install: HelmInstall, objects: list[dict[str, Any]], namespace: str
) -> list[dict[str, Any]]:
    """A rendering without what the arm's switches leave out of it (`code_pods.left_out`:
    with `dropUnservedWebhooks` the fail-closed webhook configurations served by the chart's
    own pods, with `dropUnservedAPIServices` its APIServices served by them)."""
    if not install.drops:
        return objects
    drop = set(left_out(objects, namespace, install.drops))
    return [obj for obj in objects if _ref(obj) not in drop]


def _ref(obj: Mapping[str, Any]) -> str:
    return f"{obj.get('kind')}/{(obj.get('metadata') or {}).get('name')}"


def _rendered(target: Target, install: HelmInstall, namespace: str) -> list[dict[str, Any]]:
    chart = target_chart(target, install)
    try:
        if install.chart.form == "path":
            values = json.dumps(dict(install.values), sort_keys=True)
            # The toolkit's own chart renders the same in every namespace: rendered once.
            where = DEFAULT_NAMESPACE if target.own_chart else namespace
            text = _render_path(str(install.chart.path), values, install.release, where)
            objects: list[dict[str, Any]] = json.loads(text)
        else:
            objects = render(
                dict(install.values), release=install.release, namespace=namespace, chart=chart
            )
    except CompareError as exc:
        raise _fail(target, install, exc, usage=True) from None
    return objects


@functools.lru_cache(maxsize=256)
def _render_path(path: str, values: str, release: str, namespace: str) -> str:
    """`helm template` of a chart directory, once per process for each (values, release,
    namespace): the probes ask for a trial's desired state at every look."""
    chart = get_chart(path)
    return json.dumps(render(json.loads(values), release=release, namespace=namespace, chart=chart))


def desired_of(
    api: client.ApiClient, namespace: str, objects: Sequence[Mapping[str, Any]]
) -> DesiredObjects:
    """Objects of a manifest with the API's defaults (the judge's dry-run), hooks dropped."""
    return with_api_defaults(api, namespace, judged_objects(objects))


def install_target(
    cluster: ClusterTarget,
    target: Target,
    install: HelmInstall,
    namespace: str,
    *,
    timeout: float = DEPLOY_TIMEOUT_S,
) -> HelmRelease:
    """Render first (a bad chart changes nothing; the toolkit's own chart renders), then `helm
    upgrade --install`."""
    if not target.own_chart:
        render_target(target, install, namespace)
    drop = (
        left_out(_rendered(target, install, namespace), namespace, install.drops)
        if install.drops
        else []
    )
    try:
        return install_or_upgrade(
            cluster,
            dict(install.values),
            namespace,
            release=install.release,
            timeout=timeout,
            chart=target_chart(target, install),
            drop=tuple(drop),
            no_hooks=install.disable_hooks,
        )
    except CompareError as exc:
        raise _fail(target, install, exc, usage=False) from None


def release_desired(
    cluster: ClusterTarget,
    api: client.ApiClient,
    target: Target,
    install: HelmInstall,
    namespace: str,
    *,
    applied: Applied = helm_applied,
) -> DesiredObjects:
    """The desired state of the installed release: every object of its manifest, with what its
    deployer writes on each (`applied`: Helm's, helm-controller's), defaulted."""
    objects = release_objects(cluster, namespace, install.release)
    if objects is None:
        raise CompareError(
            f"{target.source}: {install.where}: no release {install.release!r}"
            f" in namespace {namespace}",
            exit_code=EXIT_FAILED,
        )
    return manifest_desired(api, target, install, namespace, objects, applied=applied)


def manifest_desired(
    api: client.ApiClient,
    target: Target,
    install: HelmInstall,
    namespace: str,
    objects: Sequence[Mapping[str, Any]],
    *,
    applied: Applied = helm_applied,
) -> DesiredObjects:
    """A release's manifest as its desired state: every object (hooks dropped), with what its
    deployer writes on each (Helm's ownership metadata by default), defaulted."""
    kept = judged_objects(objects)
    return desired_of(api, namespace, applied(kept, release=install.release, namespace=namespace))


def uninstall_target(
    cluster: ClusterTarget,
    install: HelmInstall,
    namespace: str,
    *,
    timeout: float = DEPLOY_TIMEOUT_S,
) -> None:
    undeploy_helm(
        cluster, namespace, release=install.release, timeout=timeout, no_hooks=install.disable_hooks
    )


def is_target_file(path: Path) -> bool:
    """Whether a manifest is a target file (`kind: Target`), not a WebApp."""
    try:
        data = parse_yaml(read_text(path), str(path))
    except CompareError:
        return False
    return (
        isinstance(data, dict)
        and data.get("kind") == KIND
        and data.get("apiVersion") == API_VERSION
    )


def deploy_target(
    cluster: ClusterTarget,
    target: Target,
    install: HelmInstall,
    namespace: str,
    *,
    timeout: float = DEPLOY_TIMEOUT_S,
    cancel: threading.Event | None = None,
) -> tuple[HelmRelease, DesiredObjects]:
    """Install the release and wait until every object of its manifest holds; returns the
    release and that desired state (the release's own manifest, defaulted)."""
    started = time.monotonic()
    deployed = install_target(cluster, target, install, namespace, timeout=timeout)
    api = cluster.api_client()
    try:
        if deployed.objects is None:
            desired = release_desired(cluster, api, target, install, namespace)
        else:
            desired = manifest_desired(api, target, install, namespace, deployed.objects)
        wait_for_desired_state(
            api,
            namespace,
            desired,
            timeout=timeout,
            started=started,
            what=f"helm release {install.release}",
            cancel=cancel,
        )
    finally:
        api.close()
    return deployed, desired


def render_changes(target: Target, install: HelmInstall, namespace: str) -> list[str]:
    """The fields of the chart's objects (hooks dropped) that differ between two renders with
    the same values, release and namespace (`helm template` twice, no cluster): what the chart
    renders at random or from the clock (`randAlphaNum`, `genCA`, `now`, a `lookup` that finds
    nothing without a cluster). Named as the judge names them (`secret.data.password`); an
    object only one rendering has is named whole. Empty: the chart renders the same each time.
    """
    first = render_target(target, install, namespace)  # the one the run holds (cached)
    chart = target_chart(target, install)
    try:
        # Never the cache: a new `helm template` is a new rendering.
        second = render(
            dict(install.values), release=install.release, namespace=namespace, chart=chart
        )
    except CompareError as exc:
        raise _fail(target, install, exc, usage=True) from None
    # As the arm installs it: what it leaves out is in neither rendering.
    return rendering_changes(first, judged_objects(_installed(install, second, namespace)))


def rendering_changes(
    first: Sequence[Mapping[str, Any]], second: Sequence[Mapping[str, Any]]
) -> list[str]:
    """The judged fields that differ between two renderings of one chart (see
    `render_changes`), in the first one's order."""

    def identity(obj: Mapping[str, Any]) -> tuple[str, str, str]:
        meta = obj.get("metadata") or {}
        return (str(obj.get("kind")), str(meta.get("namespace") or ""), str(meta.get("name")))

    named = as_given(first)  # the judge's names for the objects (`secret`, `secret/<name>`)
    others = {identity(obj): obj for obj in second}
    found: list[str] = []
    for obj, item in zip(judged_objects(first), named.items, strict=True):
        again = others.pop(identity(obj), None)
        found += [m.path for m in diff_object(item.root, obj, again)]
    found += [f"{kind_name.lower()} {name}" for kind_name, _, name in others]
    return list(dict.fromkeys(found))
