"""Before a run's target trials: what its arms' manifests say - whether two trials can run
side by side (`chart_sharing`, `compare.run.sharing`), which CRDs of the charts' crds/ the
run installs (and removes at its end), and which arms a chart that renders a new value each
time leaves out (`render_findings`: rendered twice, in seconds, before anything is installed).

Each arm's one deploy before the trials is the approaches' (`compare.approaches.arms
.preflight_arm`): a chart whose desired state cannot be reached, an operator that never gets
ready, stop the run after that one deploy with the judge's diagnosis; an operator's children,
only known once it has made them, are learned there - so which faults apply is known before
the trials are planned.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare import approaches as registry
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import render_changes, render_target, rendering, target_chart
from compare.deploy.charts import chart_crds
from compare.deploy.code_pods import LEFT_OUT, needing_code
from compare.errors import CompareError
from compare.judge import REQUEST_TIMEOUT
from compare.kube.apierror import status_message
from compare.run.sharing import cannot_share
from compare.target import DROP_API_SERVICES, Target, release_in

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
        crds = chart_crds(target_chart(target, install))
        # Named as the user knows them: the release name, not a probe's suffixed one.
        reasons.extend(
            reason.replace(probes[0].release, install.release)
            for reason in cannot_share(first, second, crds)
        )
    return list(dict.fromkeys(reasons))


@dataclass(frozen=True)
class RenderFindings:
    """What two renders of each chart arm found: the arms left out, each with its one line
    (`Approach.render_finding`), and what is said of the arms that hold their installed
    rendering."""

    left_out: dict[str, str]
    notes: list[str]


def render_findings(
    target: Target,
    approaches: Sequence[str],
    namespace: str,
    *,
    doing: Callable[[str], AbstractContextManager[Any]] = lambda _: nullcontext(),
) -> RenderFindings:
    """Each chart arm of a target file rendered twice with the same values into `namespace`
    (`render_changes`): where the renderings differ, each approach says what that means for
    it (`Approach.render_finding`) - an arm whose controller renders the chart anew would
    rewrite those fields on every sync, so it cannot hold a desired state and is left out;
    one that holds what it installed (Helm's release manifest) runs, and a note says so.
    The toolkit's own chart renders the same each time: not rendered again."""
    left_out: dict[str, str] = {}
    holding: dict[str, list[str]] = {}
    if not target.from_file or target.own_chart:
        return RenderFindings(left_out, [])
    for name in approaches:
        approach = registry.get(name)
        if not approach.charted:
            continue
        with doing(f"preflight: rendering the {name} arm's chart twice"):
            fields = render_changes(target, approach.chart_arm(target), namespace)
        if not fields:
            continue
        finding = approach.render_finding(fields)
        if finding is not None:
            left_out[name] = finding
        else:
            shown = ", ".join(fields[:3]) + (
                f" and {len(fields) - 3} more" if len(fields) > 3 else ""
            )
            holding.setdefault(shown, []).append(name)
    notes = [
        f"preflight: the chart renders {fields} anew each time; the {' and '.join(names)}"
        f" {'arms hold what they' if len(names) > 1 else 'arm holds what it'} installed"
        " (the release's manifest), never a new rendering"
        for fields, names in holding.items()
    ]
    return RenderFindings(left_out, notes)


def code_findings(target: Target, approaches: Sequence[str], namespace: str) -> list[str]:
    """What of the chart arms' renderings (hooks included) needs the chart's pods to run code
    (`compare.deploy.code_pods`): on the embedded cluster it is never served. One line each,
    before anything is installed; an arm that leaves it out (`dropUnservedWebhooks`,
    `dropUnservedAPIServices`) or never runs it (`disableHooks`) says so, and the switch that
    would is named."""
    if not target.from_file or target.own_chart:
        return []
    lines: list[str] = []
    # The arms that can leave such an object out (a post-render filter), and
    # the arms that can install a chart without running its hooks.
    takers = _post_renderers(approaches)
    skippers = [name for name in approaches if registry.get(name).disables_hooks]
    for name in approaches:
        approach = registry.get(name)
        if not approach.charted:
            continue
        install = approach.chart_arm(target)
        rendered = rendering(target, install, namespace, as_installed=False)
        for need in needing_code(rendered, namespace):
            if need.switch in install.drops:
                lines.append(
                    f"preflight: {need.ref}: left out of the {name} arm's install and desired"
                    f" state ({need.switch}: {LEFT_OUT[need.switch]})"
                )
            elif need.hook and install.disable_hooks:
                lines.append(
                    f"preflight: {need.ref}: never run by the {name} arm (disableHooks: the"
                    " chart's hooks are not installed)"
                )
            elif need.switch is not None and takers:
                lines.append(
                    f"preflight: {need.line()}, or {need.switch}: true in the"
                    f" {' or '.join(takers)} arm"
                )
            elif need.hook and skippers:
                lines.append(
                    f"preflight: {need.line()}, or disableHooks: true in the"
                    f" {' or '.join(skippers)} arm"
                )
            else:
                lines.append(f"preflight: {need.line()}")
    return list(dict.fromkeys(lines))


def _post_renderers(approaches: Sequence[str]) -> list[str]:
    """The arms that can leave objects of a chart out (a post-render filter)."""
    return [name for name in approaches if registry.get(name).post_renders]


def unserved_left_out(target: Target, approaches: Sequence[str], namespace: str) -> dict[str, str]:
    """The chart arms, on the embedded cluster, that would install an APIService served by the
    chart's own pods and cannot leave it out (no post-render step: Argo CD's): never Available
    there, it would break API discovery of its group for every arm on the cluster, and such an
    arm's own health of it never comes. Each arm with its one line, found from the rendering
    before anything is installed, so the run goes on with the others in seconds."""
    if not target.from_file or target.own_chart:
        return {}
    takers = _post_renderers(approaches)
    left_out: dict[str, str] = {}
    for name in approaches:
        approach = registry.get(name)
        if not approach.charted or approach.post_renders:
            continue
        rendered = rendering(target, approach.chart_arm(target), namespace, as_installed=False)
        kept = [n for n in needing_code(rendered, namespace) if n.switch == DROP_API_SERVICES]
        if kept:
            switch = (
                f"; {DROP_API_SERVICES}: true in the {' or '.join(takers)} arm" if takers else ""
            )
            left_out[name] = (
                f"{kept[0].ref} is served by the chart's own pods, never Available on the"
                f" embedded cluster (it would break API discovery of its group for the whole"
                f" cluster), and the {name} arm cannot leave it out (no post-render step): use"
                f" values that disable it or a real cluster{switch}"
            )
    return left_out


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
