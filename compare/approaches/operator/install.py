"""Installing the operator into a cluster: kubebuilder's `make install`, plus what a local
`make run` needs to be faithful (its own ServiceAccount identity, the webhook's TLS).

- the CRD and the RBAC come from operator/config (the generated, committed files);
- the webhook's CA and serving certificate are generated with `cryptography` into the state
  directory, and the ValidatingWebhookConfiguration points the API server at the local
  operator (https://127.0.0.1:<port>) with that CA;
- a TokenRequest for the webapp-operator ServiceAccount is written into a kubeconfig that the
  operator process uses, so it runs with exactly the permissions of config/rbac.

A remote API server usually cannot reach 127.0.0.1 on the user's machine, so the webhook is
registered on the embedded cluster only, unless a webhook host the API server can reach is
given (`--webhook-host`); the schema and CEL rules apply everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.install import apply_documents
from compare.kube.apierror import delete_if_found, if_found
from compare.kube.served import wait_established
from compare.paths import OPERATOR_DIR
from webapp_operator.admission import webhook_configuration
from webapp_operator.certs import CertFiles
from webapp_operator.manifests import CRD_PATH
from webapp_operator.names import CRD_NAME, WEBHOOK_CONFIGURATION

__all__ = ["apply_cluster_objects"]

FIELD_MANAGER = "compare-install"
_CONFIG = OPERATOR_DIR / "config"


def _kustomized(directory: Path) -> list[Path]:
    """The files a kustomization lists (one source for `kubectl apply -k` and for us)."""
    listing = yaml.safe_load((directory / "kustomization.yaml").read_text())
    return [directory / name for name in listing["resources"]]


def _config_documents() -> list[dict[str, Any]]:
    """What `make install` applies: namespace, CRD, ServiceAccount, roles and bindings."""
    files = [_CONFIG / "manager" / "namespace.yaml", CRD_PATH, *_kustomized(_CONFIG / "rbac")]
    docs: list[dict[str, Any]] = []
    for path in files:
        docs += [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    return docs


def apply_cluster_objects(
    cluster: ClusterTarget, *, certs: CertFiles, webhook_url: str | None
) -> None:
    """Server-side apply the CRD, RBAC and (with a URL) the webhook configuration; wait until
    the CRD is established. Without a URL, a configuration left by an earlier local operator
    (one that points at a URL) is deleted: the operator about to start here will not serve
    it, and its failurePolicy Fail would reject every WebApp write."""
    docs = _config_documents()
    if webhook_url is not None:
        docs.append(webhook_configuration(certs.ca.read_bytes(), url=webhook_url))
    else:
        _drop_local_webhook(cluster)
    apply_documents(cluster, docs, field_manager=FIELD_MANAGER)
    with cluster.api_client() as api:
        wait_established(api, [CRD_NAME], timeout=30.0)


def _drop_local_webhook(cluster: ClusterTarget) -> None:
    with cluster.api_client() as api:
        hooks = client.AdmissionregistrationV1Api(api)
        current = if_found(
            f"reading the webhook configuration {WEBHOOK_CONFIGURATION}",
            hooks.read_validating_webhook_configuration,
            WEBHOOK_CONFIGURATION,
        )
        if current is not None and any(hook.client_config.url for hook in current.webhooks or []):
            delete_if_found(
                f"deleting the webhook configuration {WEBHOOK_CONFIGURATION}",
                hooks.delete_validating_webhook_configuration,
                WEBHOOK_CONFIGURATION,
            )
