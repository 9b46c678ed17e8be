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

import base64
import hashlib
import os
import socket
import subprocess
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from compare.cluster import ClusterTarget, tool_path
from compare.errors import CompareError
from compare.paths import OPERATOR_DIR, cache_dir
from webapp_operator.admission import webhook_configuration
from webapp_operator.certs import CertFiles, ensure_tls
from webapp_operator.manifests import CRD_PATH
from webapp_operator.names import (
    CRD_NAME,
    OPERATOR_NAMESPACE,
    SERVICE_ACCOUNT,
    WEBHOOK_CONFIGURATION,
)

__all__ = [
    "TOKEN_SECONDS",
    "apply_cluster_objects",
    "cluster_key",
    "ensure_certs",
    "free_port",
    "is_local",
    "state_dir",
    "write_identity_kubeconfig",
]

FIELD_MANAGER = "compare-install"
# The local operator's token lives a week; every start requests a fresh one.
TOKEN_SECONDS = 7 * 24 * 3600
KUBECTL_TIMEOUT_S = 60.0
_CONFIG = OPERATOR_DIR / "config"


def is_local(target: ClusterTarget) -> bool:
    """The embedded cluster, however it was named (`--kubeconfig` pointing at its kubeconfig
    included): its API server runs on loopback and can call a webhook on 127.0.0.1."""
    embedded_root = (cache_dir() / "kwok" / "clusters").resolve()
    return target.embedded or target.kubeconfig.resolve().parent.parent == embedded_root


def cluster_key(target: ClusterTarget) -> str:
    """A directory name per cluster: the embedded cluster's name, else a hash of the
    kubeconfig path and context. Two ways of naming one cluster share one operator."""
    if is_local(target) and target.context is None:
        return target.kubeconfig.resolve().parent.name
    digest = hashlib.sha256(f"{target.kubeconfig.resolve()}|{target.context}".encode())
    return f"ext-{digest.hexdigest()[:12]}"


def state_dir(target: ClusterTarget) -> Path:
    """Where the local operator of this cluster keeps its pid, log, certs and kubeconfig."""
    return cache_dir() / "operator" / cluster_key(target)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _kubectl(target: ClusterTarget, *args: str, stdin: str | None = None) -> str:
    cmd = [tool_path("kubectl"), *target.kubectl_args(), *args]
    try:
        result = subprocess.run(
            cmd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=KUBECTL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise CompareError(f"kubectl {args[0]} timed out after {KUBECTL_TIMEOUT_S:.0f}s") from exc
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise CompareError(f"kubectl {args[0]} failed: {lines[-1] if lines else 'no output'}")
    return result.stdout


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
    target: ClusterTarget, *, certs: CertFiles, webhook_url: str | None
) -> None:
    """Server-side apply the CRD, RBAC and (with a URL) the webhook configuration; wait until
    the CRD is established. Without a URL, a configuration left by an earlier local operator
    (one that points at a URL) is deleted: the operator about to start here will not serve
    it, and its failurePolicy Fail would reject every WebApp write."""
    docs = _config_documents()
    if webhook_url is not None:
        docs.append(webhook_configuration(certs.ca.read_bytes(), url=webhook_url))
    else:
        _drop_local_webhook(target)
    _kubectl(
        target,
        "apply",
        "--server-side",
        "--force-conflicts",
        f"--field-manager={FIELD_MANAGER}",
        "-f",
        "-",
        stdin=yaml.safe_dump_all(docs, sort_keys=False),
    )
    _kubectl(target, "wait", "--for=condition=Established", f"crd/{CRD_NAME}", "--timeout=30s")


def _drop_local_webhook(target: ClusterTarget) -> None:
    api = target.api_client()
    hooks = client.AdmissionregistrationV1Api(api)
    try:
        try:
            current = hooks.read_validating_webhook_configuration(WEBHOOK_CONFIGURATION)
        except client.ApiException as exc:
            if exc.status == 404:
                return
            raise CompareError(
                f"reading the webhook configuration {WEBHOOK_CONFIGURATION}: "
                f"{exc.status} {exc.reason}"
            ) from None
        if any(hook.client_config.url for hook in current.webhooks or []):
            try:
                hooks.delete_validating_webhook_configuration(WEBHOOK_CONFIGURATION)
            except client.ApiException as exc:
                if exc.status != 404:
                    raise CompareError(
                        f"deleting the webhook configuration {WEBHOOK_CONFIGURATION}: "
                        f"{exc.status} {exc.reason}"
                    ) from None
    finally:
        api.close()


def ensure_certs(directory: Path, hosts: list[str]) -> CertFiles:
    files = CertFiles(directory)
    ensure_tls(files, hosts)
    return files


def write_identity_kubeconfig(target: ClusterTarget, path: Path) -> None:
    """A kubeconfig for the operator: the target's server and CA, the ServiceAccount's token."""
    api = target.api_client()
    try:
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        }
        try:
            answer = client.CoreV1Api(api).create_namespaced_service_account_token(
                SERVICE_ACCOUNT, OPERATOR_NAMESPACE, request
            )
        except client.ApiException as exc:
            if exc.status == 404:
                raise CompareError(
                    f"the operator is not installed on {target.describe()}: "
                    "run `compare deploy operator` first"
                ) from None
            raise CompareError(
                f"requesting a token for {OPERATOR_NAMESPACE}/{SERVICE_ACCOUNT} failed: "
                f"{exc.status} {exc.reason}"
            ) from None
        token = answer.status.token
        conf = api.configuration
        cluster: dict[str, Any] = {"server": conf.host}
        if not conf.verify_ssl:
            cluster["insecure-skip-tls-verify"] = True
        elif conf.ssl_ca_cert:
            ca = Path(conf.ssl_ca_cert).read_bytes()
            cluster["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    finally:
        api.close()
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": SERVICE_ACCOUNT, "user": {"token": token}}],
        "contexts": [
            {"name": SERVICE_ACCOUNT, "context": {"cluster": "cluster", "user": SERVICE_ACCOUNT}}
        ],
        "current-context": SERVICE_ACCOUNT,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    # The token is a credential: owner-only, written atomically.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(yaml.safe_dump(kubeconfig, sort_keys=False))
    tmp.replace(path)
