"""The built-in WebApp as a target: what `compare run`, `compare deploy NAME` and the probes
deploy and judge without `--target` (examples/target-webapp.yaml is the same, as a file).

Its chart arms (`helm`, `flux`, `argocd`) are the toolkit's own chart, charts/webapp, with the
WebApp's values, under the WebApp's name as the release; the objects carry the WebApp's name
whatever the release (`fullnameOverride`). Its chart is the toolkit's own and its values a
checked WebApp's (`own_chart`): it needs no preflight, an install renders nothing first, and
the chart is rendered once for every namespace, as it installs it.
The operator arm is not built here (`operator` is None).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from compare.paths import CHARTS_DIR, DEFAULT_APP
from compare.target.load import Chart, HelmInstall, Target
from compare.webapp import WebApp, chart_values

BUILTIN_CHART = CHARTS_DIR / "webapp"


def builtin_target(
    webapp: WebApp,
    source: Path | None = None,
    *,
    release: str | None = None,
    extra_values: Mapping[str, Any] | None = None,
) -> Target:
    """The WebApp (read from `source`, default examples/webapp.yaml) as a target: every chart
    arm the built-in chart with `chart_values(webapp, extra_values)`, released as `release`
    (default: the WebApp's name). A bad extra value is a one-line CompareError (`values: ...`)."""
    values = chart_values(webapp, extra_values)

    def arm(where: str) -> HelmInstall:
        chart = Chart("path", path=BUILTIN_CHART)
        return HelmInstall(where, chart, release or webapp.name, values)

    return Target(
        source=source or DEFAULT_APP,
        name=webapp.name,
        namespace=webapp.metadata.namespace,
        helm=arm("helm"),
        flux=arm("flux"),
        argocd=arm("argocd"),
        own_chart=True,
    )
