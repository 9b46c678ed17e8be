"""What each deployer itself writes on every object it applies: part of its desired state.

A chart's rendered manifest is not all a release applies. Each deployer adds metadata of its
own to every object, whatever the chart's templates set, and that metadata is as much the
approach's desired state as the chart's fields: a chart whose ConfigMap sets no labels still
gets Helm's label, and removing it is drift. Defined here once per approach, from the
deployer's own code, and tested against what it really writes (tests/target/test_ownership.py):

- **Helm** (`helm install`/`upgrade`, Helm's `setMetadataVisitor`): the label
  `app.kubernetes.io/managed-by: Helm` and the annotations `meta.helm.sh/release-name` and
  `meta.helm.sh/release-namespace`, merged over what the chart set (Helm overwrites a chart's
  own value). The release's stored manifest does not carry them.
- **Flux** (helm-controller runs Helm's install and upgrade actions): Helm's metadata above,
  plus its origin labels `helm.toolkit.fluxcd.io/name` and `helm.toolkit.fluxcd.io/namespace`
  (the HelmRelease's name and namespace; a post-render step, so the stored manifest has them).
- **The operator** writes a controller owner reference to its WebApp on each child; owner
  references are an object's identity, not judged (`compare.judge.allow`), so nothing is added.

Nothing else is allowed by this rule: a label or an annotation no deployer writes is judged
closed-world as before (a foreign label is drift; an unowned annotation is allowed by the
allow-list for its own reason).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

MANAGED_BY = "app.kubernetes.io/managed-by"
HELM = "Helm"
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
ORIGIN_NAME = "helm.toolkit.fluxcd.io/name"
ORIGIN_NAMESPACE = "helm.toolkit.fluxcd.io/namespace"


# A deployer's objects as it applies them: `helm_applied` or `flux_applied`.
Applied = Callable[..., list[dict[str, Any]]]


@dataclass(frozen=True)
class Writes:
    """The labels and annotations a deployer merges into every object it applies."""

    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)

    def onto(self, objects: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Copies of `objects` with this metadata merged in (the deployer's value wins)."""
        merged = []
        for obj in objects:
            out = copy.deepcopy(dict(obj))
            meta = out.setdefault("metadata", {})
            for key, added in (("labels", self.labels), ("annotations", self.annotations)):
                if added:
                    meta[key] = {**(meta.get(key) or {}), **added}
            merged.append(out)
        return merged


def helm_writes(release: str, namespace: str) -> Writes:
    """What `helm install`/`upgrade` of `release` into `namespace` writes on each object."""
    return Writes(
        labels={MANAGED_BY: HELM},
        annotations={RELEASE_NAME: release, RELEASE_NAMESPACE: namespace},
    )


def flux_writes(release: str, namespace: str) -> Writes:
    """What helm-controller writes on each object of a HelmRelease's release: Helm's
    ownership metadata and its origin labels (the HelmRelease's name, which the toolkit gives
    its release, and namespace)."""
    helm = helm_writes(release, namespace)
    origin = {ORIGIN_NAME: release, ORIGIN_NAMESPACE: namespace}
    return Writes(labels={**helm.labels, **origin}, annotations=helm.annotations)


def helm_applied(
    objects: Sequence[Mapping[str, Any]], *, release: str, namespace: str
) -> list[dict[str, Any]]:
    """A Helm release's objects as Helm applies them."""
    return helm_writes(release, namespace).onto(objects)


def flux_applied(
    objects: Sequence[Mapping[str, Any]], *, release: str, namespace: str
) -> list[dict[str, Any]]:
    """A HelmRelease's objects as helm-controller applies them."""
    return flux_writes(release, namespace).onto(objects)
