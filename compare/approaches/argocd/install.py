"""Installing the real Argo CD controllers' CRDs, identity and settings into a cluster.

tools/argocd/build.sh (run by tools/build.sh, with a stamp of its own) builds the multi-call
`argocd` binary of the pinned `github.com/argoproj/argo-cd/v3` module into the cache's
`argocd/bin/` (argocd-application-controller and argocd-repo-server are symlinks to it: the
binary's base name selects the component), the Helm 3 CLI its repo-server renders charts with,
and copies the Application and AppProject CRDs and the application controller's ClusterRole
from the same module version (`manifests/` in the Go module cache).

Everything lives in the `compare-argocd` namespace (not `argocd`: a cluster of the user's may
run an Argo CD of its own there); the ClusterRole and its binding carry the `compare-` prefix
for the same reason. In it:

- the ServiceAccount the application controller runs as (a token kubeconfig), bound to
  Argo CD's own ClusterRole for it; the repo-server needs no cluster access at all;
- the settings Argo CD reads there (`argocd-cm`, `argocd-rbac-cm`, `argocd-secret`), empty,
  labelled `app.kubernetes.io/part-of: argocd` (its settings informer selects on that);
- the `default` AppProject (argocd-server creates it in a full install; none runs here):
  any source, any destination, any kind, Applications in any namespace, so the project never
  decides a verdict.
"""

from __future__ import annotations

import base64
import os
import secrets
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.install import apply_crds, apply_documents, bound_cluster_role
from compare.errors import CompareError
from compare.judge import REQUEST_TIMEOUT
from compare.kube.apierror import if_found
from compare.paths import cache_dir

ARGOCD_NAMESPACE = "compare-argocd"
APPLICATION_CONTROLLER = "argocd-application-controller"
REPO_SERVER = "argocd-repo-server"
CONTROLLERS = (REPO_SERVER, APPLICATION_CONTROLLER)
FIELD_MANAGER = "compare-install"
ROLE_NAME = "compare-argocd-application-controller"
PART_OF = {"app.kubernetes.io/part-of": "argocd"}
SETTINGS_CONFIGMAPS = ("argocd-cm", "argocd-rbac-cm")
SETTINGS_SECRET = "argocd-secret"
SECRET_KEY = "server.secretkey"
DEFAULT_PROJECT = "default"
# What build.sh writes (the binaries' names are what `compare doctor`-style checks look for).
ARGOCD_BINARIES = ("argocd", APPLICATION_CONTROLLER, REPO_SERVER, "helm")


def argocd_dir() -> Path:
    return cache_dir() / "argocd"


def argocd_bin_dir(directory: Path | None = None) -> Path:
    """The directory of the argocd binary, its component links and the repo-server's helm."""
    return directory or argocd_dir() / "bin"


def crd_paths() -> list[Path]:
    return [argocd_dir() / "crds" / f for f in ("application-crd.yaml", "appproject-crd.yaml")]


def role_path() -> Path:
    return argocd_dir() / "rbac" / "application-controller-clusterrole.yaml"


def check_argocd_binaries(directory: Path | None = None) -> None:
    """One-line error when a binary (in the cache's argocd/bin/, or in `directory`), a CRD or
    the ClusterRole is missing."""
    for name in ARGOCD_BINARIES:
        path = argocd_bin_dir(directory) / name
        if not os.access(path, os.X_OK):
            raise CompareError(
                f"the Argo CD {name} binary is missing ({path}): run `bash tools/build.sh` "
                "(or tools/argocd/build.sh) to build it"
            )
    for path in [*crd_paths(), role_path()]:
        if not path.is_file():
            raise CompareError(
                f"an Argo CD manifest is missing ({path}): run `bash tools/argocd/build.sh` "
                "to copy it"
            )


def _load(path: Path) -> list[dict[str, Any]]:
    try:
        return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    except (OSError, yaml.YAMLError) as exc:
        raise CompareError(f"{path}: cannot read the Argo CD manifest ({exc})") from None


def crd_documents() -> list[dict[str, Any]]:
    return [doc for path in crd_paths() for doc in _load(path)]


def install_documents(secret_key: str) -> list[dict[str, Any]]:
    """Everything but the CRDs: the namespace, the controller's identity (bound to Argo CD's own
    ClusterRole for the application controller, under our name), the settings and the default
    AppProject."""
    roles = [doc for doc in _load(role_path()) if doc.get("kind") == "ClusterRole"]
    if len(roles) != 1:
        raise CompareError(f"{role_path()}: expected one ClusterRole, found {len(roles)}")
    account = {"name": APPLICATION_CONTROLLER, "namespace": ARGOCD_NAMESPACE}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ARGOCD_NAMESPACE}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": account},
        *bound_cluster_role(ROLE_NAME, roles[0]["rules"], APPLICATION_CONTROLLER, ARGOCD_NAMESPACE),
        *settings_documents(secret_key),
    ]


def settings_documents(secret_key: str) -> list[dict[str, Any]]:
    """Argo CD's settings (empty but for the one key it requires: its defaults) and the default
    AppProject."""
    meta = {"namespace": ARGOCD_NAMESPACE, "labels": PART_OF}
    docs: list[dict[str, Any]] = []
    docs += [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, **meta}}
        for name in SETTINGS_CONFIGMAPS
    ]
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "Opaque",
            "metadata": {"name": SETTINGS_SECRET, **meta},
            # Argo CD signs its API tokens with it (no API server runs here) and refuses to
            # look up a cluster while it is missing.
            "data": {SECRET_KEY: secret_key},
        }
    )
    docs.append(
        {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "AppProject",
            "metadata": {"name": DEFAULT_PROJECT, "namespace": ARGOCD_NAMESPACE},
            "spec": {
                "sourceRepos": ["*"],
                # Applications in any namespace (each trial's own).
                "sourceNamespaces": ["*"],
                "destinations": [{"server": "*", "namespace": "*"}],
                "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
            },
        }
    )
    return docs


def apply_argocd_objects(cluster: ClusterTarget) -> None:
    """Server-side apply the CRDs, wait until they are established, then the rest."""
    apply_crds(cluster, crd_documents(), field_manager=FIELD_MANAGER)
    apply_documents(cluster, install_documents(_secret_key(cluster)), field_manager=FIELD_MANAGER)


def _secret_key(cluster: ClusterTarget) -> str:
    """The secret key already in argocd-secret (base64, as stored), else a new random one: a
    restart keeps it."""
    api = cluster.api_client()
    try:
        found = if_found(
            f"reading Secret {ARGOCD_NAMESPACE}/{SETTINGS_SECRET} failed",
            client.CoreV1Api(api).read_namespaced_secret,
            SETTINGS_SECRET,
            ARGOCD_NAMESPACE,
            _request_timeout=REQUEST_TIMEOUT,
        )
    finally:
        api.close()
    key = ((found.data or {}) if found is not None else {}).get(SECRET_KEY)
    return str(key) if key else base64.b64encode(secrets.token_bytes(32)).decode()
