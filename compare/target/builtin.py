"""The built-in WebApp as a target: what `compare run`, `compare deploy NAME` and the probes
deploy and judge without `--target` (examples/target-webapp.yaml is the same, as a file).

It has an arm for every approach the caller names (the registry's `ArmKey`s). One of kind
`chart` is the toolkit's own chart, charts/webapp, with the WebApp's values, under the
WebApp's name as the release; the objects carry the WebApp's name whatever the release
(`fullnameOverride`). Its chart is the toolkit's own and its values a
checked WebApp's (`own_chart`): an install renders nothing first, the chart is rendered once
for every namespace, as it installs it, and a trial's release keeps the WebApp's name.
It is not a file (`from_file` False): a run deploys nothing of it once before the trials
(nothing to learn), takes the registry's default approaches, and records the WebApp's spec in
results.json (`app_spec`), not a target file.
An arm of kind `operator` is the toolkit's own operator (install form `toolkit`) with the
WebApp as its one resource: ready when Available, held to the built-in chart's rendering of it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from compare.paths import CHARTS_DIR, DEFAULT_APP
from compare.target.load import (
    READY_CONDITION,
    Chart,
    HelmInstall,
    Operator,
    OperatorInstall,
    Target,
)
from compare.target.model import ArmKey
from compare.webapp import API_GROUP, API_VERSION, KIND, WebApp, chart_values, to_cr

BUILTIN_CHART = CHARTS_DIR / "webapp"


def builtin_target(
    webapp: WebApp,
    source: Path | None = None,
    *,
    arms: Sequence[ArmKey],
    release: str | None = None,
    extra_values: Mapping[str, Any] | None = None,
) -> Target:
    """The WebApp (read from `source`, default examples/webapp.yaml) as a target with `arms`
    (the registry's: `compare.approaches.builtin_target`): every chart arm the built-in chart
    with `chart_values(webapp, extra_values)`, released as `release` (default: the WebApp's
    name); every operator arm `builtin_operator(webapp)`. A bad extra value is a one-line
    CompareError (`values: ...`)."""
    values = chart_values(webapp, extra_values)

    def arm(key: ArmKey) -> HelmInstall | Operator:
        if key.kind == "operator":
            return builtin_operator(webapp)
        chart = Chart("path", path=BUILTIN_CHART)
        return HelmInstall(key.name, chart, release or webapp.name, values)

    return Target(
        source=source or DEFAULT_APP,
        name=webapp.name,
        namespace=webapp.metadata.namespace,
        arms={key.name: arm(key) for key in arms},
        own_chart=True,
        from_file=False,
        app_spec=webapp.spec.model_dump(mode="json", exclude_none=True),
    )


def builtin_release(
    approach: str, release: str, namespace: str, values: Mapping[str, Any] | None = None
) -> Target:
    """A release of the built-in chart found deployed (`compare status`) as the built-in
    target it is: its one arm `approach` (a chart arm's) the built-in chart under `release`
    with the `values` it was deployed with (a Helm release's are not read: its applied
    manifest, not a rendering, is its desired state)."""
    arm = HelmInstall(approach, Chart("path", path=BUILTIN_CHART), release, dict(values or {}))
    return Target(
        source=BUILTIN_CHART,
        name=release,
        namespace=namespace,
        arms={approach: arm},
        own_chart=True,
    )


def builtin_operator(webapp: WebApp) -> Operator:
    """The operator arm of the built-in target: `webapp` for the toolkit's own operator."""
    return Operator(
        install=OperatorInstall("toolkit"),
        resources=(to_cr(webapp),),
        ready_condition=READY_CONDITION,
        webapps=(webapp,),
    )


def webapp_named(name: str) -> Operator:
    """The toolkit operator's arm naming one WebApp by name alone: what removing it needs
    (without its spec there is no desired state: never deployed or judged through this)."""
    body = {"apiVersion": f"{API_GROUP}/{API_VERSION}", "kind": KIND, "metadata": {"name": name}}
    return Operator(OperatorInstall("toolkit"), (body,), READY_CONDITION)
