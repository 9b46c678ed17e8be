"""What the operator approach is held to: the chart's rendering of the same WebApp, as the
operator would apply it - never the operator's own builders.

Judging the operator against what its own builders make could never show a bug the builders
and the reconciler share. The chart (`charts/webapp`) is an independent implementation of the
same WebApp spec, so the operator is held to the chart's objects for the same WebApp (the
release named after the WebApp, as `helm` deploys it) with only the differences that belong to
the approach, each with its reason:

- **Who manages it**: wherever the chart renders `app.kubernetes.io/managed-by` (Helm fills in
  `.Release.Service`, the deployer's own name), the operator writes its own name.
- **The chart's own metadata**: `helm.sh/chart` (the chart's name and version) and
  `app.kubernetes.io/version` (the image tag, else the chart's `appVersion`) are labels the
  `helm create` convention derives from a `Chart.yaml`; an operator has none, so it sets
  neither (on the objects or their pod templates).
- **Identity**: a controller owner reference to the WebApp and the namespace on each child
  (owner references are identity, not judged: `compare.judge.allow`).

`tests/webapp_operator/test_reference.py` checks that the operator's builders agree with this
reference for varied WebApps, through the API server's defaults.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from compare.deploy.charts import webapp_manifest
from compare.deploy.ownership import MANAGED_BY
from compare.judge.kinds import pod_template
from compare.webapp import WebApp
from compare.webapp.spec import API_GROUP, API_VERSION, KIND
from webapp_operator.names import OPERATOR_NAME

CHART_METADATA_LABELS = ("helm.sh/chart", "app.kubernetes.io/version")


def operator_reference(webapp: WebApp, namespace: str) -> list[dict[str, Any]]:
    """The objects the operator must keep for `webapp` in `namespace` (no cluster needed)."""
    owner = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": KIND,
        "name": webapp.name,
        "uid": "",  # identity, filled in by the live object
        "controller": True,
        "blockOwnerDeletion": True,
    }
    return operator_applied(webapp_manifest(webapp, release=webapp.name), namespace, owner)


def operator_applied(
    rendered: Sequence[Mapping[str, Any]], namespace: str, owner: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """Copies of a chart's rendered objects as an operator applies them (the rules above)."""
    applied = []
    for obj in rendered:
        out = copy.deepcopy(dict(obj))
        meta = out.setdefault("metadata", {})
        _relabel(meta)
        meta["namespace"] = namespace
        meta["ownerReferences"] = [dict(owner)]
        template = pod_template(out)
        if isinstance(template, dict) and isinstance(template.get("metadata"), dict):
            _relabel(template["metadata"])
        applied.append(out)
    return applied


def _relabel(meta: dict[str, Any]) -> None:
    labels = meta.get("labels")
    if not isinstance(labels, dict):
        return
    for key in CHART_METADATA_LABELS:
        labels.pop(key, None)
    if MANAGED_BY in labels:
        labels[MANAGED_BY] = OPERATOR_NAME
