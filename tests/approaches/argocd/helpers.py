"""What the Argo CD tests build by hand: an Application of charts/webapp with a WebApp's values,
from the root of the toolkit's local Helm repository (where the chart server packages it at
its start), to measure Argo CD itself without the approach's deploy path."""

from __future__ import annotations

from typing import Any

import yaml

from compare.approaches.argocd.application import THREE_WAY_DIFF, chart_application
from compare.paths import CHARTS_DIR
from compare.webapp import WebApp, chart_values


def argocd_application(
    webapp: WebApp, namespace: str, *, repository_url: str, diff: str = THREE_WAY_DIFF
) -> dict[str, Any]:
    """The Application of one WebApp: charts/webapp with the WebApp's values."""
    chart = yaml.safe_load((CHARTS_DIR / "webapp" / "Chart.yaml").read_text())
    source = {"repoURL": repository_url, "chart": chart["name"], "targetRevision": chart["version"]}
    values = chart_values(webapp)
    return chart_application(
        namespace, release=webapp.name, source=source, values=values, diff=diff
    )
