"""Installing the real Flux controllers' CRDs and least-privilege identities into a cluster.

source-controller and helm-controller are built from their Go modules by tools/flux/build.sh
(called by tools/build.sh, with a stamp of its own); their CRDs are copied at build time from
the same module versions (`config/crd/bases` in the Go module cache) into the cache's
`flux/crds/`. Both controllers run as local processes (compare.deploy.processes), each under
the token of its own ServiceAccount in the `compare-flux` namespace, bound to a ClusterRole
that grants only what it does here:

- source-controller: its source kinds (HelmRepository, HelmChart, ...) and their status, Secrets
  read (repository credentials; none are used), Events;
- helm-controller: HelmReleases and their status, HelmCharts it creates from a release's chart
  template, Helm's release Secrets, and the kinds charts/webapp renders (Deployment, Service,
  the test-hook Pod), plus what its readiness checks read (ReplicaSets, Pods, Events).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from compare.cluster import ClusterTarget
from compare.cluster.binaries import run_build
from compare.cluster.toolchain import FLUX
from compare.deploy.install import apply_crds, apply_documents, bound_cluster_role, kubectl
from compare.errors import CompareError
from compare.paths import bin_dir, cache_dir

FLUX_NAMESPACE = "compare-flux"
SOURCE_CONTROLLER = "source-controller"
HELM_CONTROLLER = "helm-controller"
CONTROLLERS = (SOURCE_CONTROLLER, HELM_CONTROLLER)
FIELD_MANAGER = "compare-install"
ROLE_PREFIX = "compare-flux-"

_SOURCE_GROUP = "source.toolkit.fluxcd.io"
_HELM_GROUP = "helm.toolkit.fluxcd.io"
_EVENTS = [
    {"apiGroups": [""], "resources": ["events"], "verbs": ["create", "patch"]},
    {"apiGroups": ["events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch"]},
]
_RW = ["get", "list", "watch", "create", "update", "patch", "delete"]
_RO = ["get", "list", "watch"]

RULES: dict[str, list[dict[str, Any]]] = {
    SOURCE_CONTROLLER: [
        {
            "apiGroups": [_SOURCE_GROUP],
            "resources": [
                "helmrepositories",
                "helmcharts",
                "gitrepositories",
                "buckets",
                "ocirepositories",
            ],
            "verbs": ["get", "list", "watch", "update", "patch"],
        },
        {
            "apiGroups": [_SOURCE_GROUP],
            "resources": [
                "helmrepositories/status",
                "helmcharts/status",
                "gitrepositories/status",
                "buckets/status",
                "ocirepositories/status",
                "helmrepositories/finalizers",
                "helmcharts/finalizers",
                "gitrepositories/finalizers",
                "buckets/finalizers",
                "ocirepositories/finalizers",
            ],
            "verbs": ["get", "update", "patch"],
        },
        {"apiGroups": [_SOURCE_GROUP], "resources": ["externalartifacts"], "verbs": _RO},
        {"apiGroups": [""], "resources": ["secrets", "configmaps"], "verbs": _RO},
        *_EVENTS,
    ],
    HELM_CONTROLLER: [
        {
            "apiGroups": [_HELM_GROUP],
            "resources": ["helmreleases"],
            "verbs": ["get", "list", "watch", "update", "patch"],
        },
        {
            "apiGroups": [_HELM_GROUP],
            "resources": ["helmreleases/status", "helmreleases/finalizers"],
            "verbs": ["get", "update", "patch"],
        },
        {"apiGroups": [_SOURCE_GROUP], "resources": ["helmcharts"], "verbs": _RW},
        {
            "apiGroups": [_SOURCE_GROUP],
            "resources": [
                "helmrepositories",
                "ocirepositories",
                "externalartifacts",
                "helmcharts/status",
            ],
            "verbs": _RO,
        },
        # Helm's release records (storage driver "secret") and the chart's objects.
        {"apiGroups": [""], "resources": ["secrets", "services", "pods"], "verbs": _RW},
        {"apiGroups": [""], "resources": ["configmaps", "namespaces"], "verbs": _RO},
        {"apiGroups": ["apps"], "resources": ["deployments"], "verbs": _RW},
        {"apiGroups": ["apps"], "resources": ["replicasets"], "verbs": _RO},
        {"apiGroups": [""], "resources": ["events"], "verbs": _RO},
        *_EVENTS,
    ],
}


def flux_binary(name: str, directory: Path | None = None) -> Path:
    """A controller's binary: in the cache's bin/, or in `directory` when given."""
    return (directory or bin_dir()) / name


def crd_dir() -> Path:
    return cache_dir() / "flux" / "crds"


def ensure_flux_binaries() -> None:
    """Build the Flux controllers (tools/flux/build.sh) when missing or out of date.

    Its stamp is its own: this never rebuilds the control-plane binaries."""
    run_build("flux/build.sh", "the Flux controllers", FLUX, quiet=True)


def check_flux_binaries(directory: Path | None = None) -> None:
    """One-line error when a controller binary (in the cache's bin/, or in `directory`) or the
    CRDs are missing."""
    for name in CONTROLLERS:
        path = flux_binary(name, directory)
        if not os.access(path, os.X_OK):
            raise CompareError(
                f"the Flux {name} binary is missing ({path}): run `bash tools/build.sh` "
                "(or tools/flux/build.sh) to build it"
            )
    if not sorted(crd_dir().glob("*.yaml")):
        raise CompareError(
            f"the Flux CRDs are missing ({crd_dir()}): run `bash tools/flux/build.sh` to copy them"
        )


def crd_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted(crd_dir().glob("*.yaml")):
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def _identity_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FLUX_NAMESPACE}}
    ]
    for name in CONTROLLERS:
        account = {"name": name, "namespace": FLUX_NAMESPACE}
        docs.append({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": account})
        docs += bound_cluster_role(ROLE_PREFIX + name, RULES[name], name, FLUX_NAMESPACE)
    return docs


def apply_flux_objects(cluster: ClusterTarget) -> None:
    """Server-side apply the Flux CRDs (waiting until they are established), the namespace,
    ServiceAccounts and ClusterRoles."""
    apply_crds(cluster, crd_documents(), field_manager=FIELD_MANAGER)
    apply_documents(cluster, _identity_documents(), field_manager=FIELD_MANAGER)


# The ClusterRoles (and bindings) a target's chart gets helm-controller granted
# (`compare.approaches.flux.arm`) carry this label.
CHART_ROLE_LABEL = "compare.example.com/flux-chart-role"


def delete_flux_objects(cluster: ClusterTarget) -> None:
    """Remove the identities (namespace, ClusterRoles, bindings, those granted for target
    charts too); the CRDs stay (deleting a CRD deletes every object of it, the user's
    included)."""
    kubectl(
        cluster,
        "delete",
        "--ignore-not-found",
        "--wait=false",
        "clusterrolebinding,clusterrole",
        "-l",
        CHART_ROLE_LABEL,
    )
    roles = [f"clusterrole/{ROLE_PREFIX}{n}" for n in CONTROLLERS]
    bindings = [f"clusterrolebinding/{ROLE_PREFIX}{n}" for n in CONTROLLERS]
    kubectl(
        cluster,
        "delete",
        "--ignore-not-found",
        "--wait=false",
        *roles,
        *bindings,
        f"namespace/{FLUX_NAMESPACE}",
    )
