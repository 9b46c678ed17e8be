"""What installing an approach into a cluster shares: the CLI tools (kubectl, helm) with one-line
errors, server-side apply of documents (through `compare.kube`), and a kubeconfig carrying a
ServiceAccount's token for a local process that must run with exactly that identity's
permissions."""

from __future__ import annotations

import base64
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml
from kubernetes import client

from compare import outputfile
from compare.cluster import ClusterTarget, tool_path
from compare.errors import CompareError
from compare.kube import served

# A local process's token lives a week; every start requests a fresh one.
TOKEN_SECONDS = 7 * 24 * 3600
TOOL_TIMEOUT_S = 60.0


def run_tool(tool: str, *args: str, flags: Sequence[str] = (), stdin: str | None = None) -> str:
    """`tool [flags] args` (its stdout); a failure is one line: the tool's last stderr line.
    `flags` (cluster selection) go first and are not named in errors."""
    cmd = [tool_path(tool), *flags, *args]
    try:
        result = subprocess.run(
            cmd,
            input=stdin,
            capture_output=True,
            text=True,
            timeout=TOOL_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        raise CompareError(f"{tool} {args[0]} timed out after {TOOL_TIMEOUT_S:.0f}s") from exc
    if result.returncode != 0:
        lines = [line for line in result.stderr.strip().splitlines() if line.strip()]
        raise CompareError(f"{tool} {args[0]} failed: {lines[-1] if lines else 'no output'}")
    return result.stdout


def kubectl(cluster: ClusterTarget, *args: str, stdin: str | None = None) -> str:
    return run_tool("kubectl", *args, flags=cluster.kubectl_args(), stdin=stdin)


def apply_documents(
    cluster: ClusterTarget,
    docs: Sequence[dict[str, Any]],
    *,
    field_manager: str,
    namespace: str = "default",
) -> None:
    """Server-side apply of these documents (forced), in order (`compare.kube.served`)."""
    api = cluster.api_client()
    try:
        served.apply_all(api, docs, field_manager=field_manager, namespace=namespace)
    finally:
        api.close()


def apply_crds(
    cluster: ClusterTarget, crds: Sequence[dict[str, Any]], *, field_manager: str
) -> None:
    """Server-side apply these CustomResourceDefinitions and wait until they are established
    (through the API: `kubectl wait` fails at once on a CRD whose status has no conditions yet,
    a fresh cluster right after the apply)."""
    api = cluster.api_client()
    try:
        served.apply_all(api, crds, field_manager=field_manager, namespace="default")
        names = [str(doc["metadata"]["name"]) for doc in crds]
        served.wait_established(api, names, timeout=30.0)
    finally:
        api.close()


def bound_cluster_role(
    name: str,
    rules: list[dict[str, Any]],
    service_account: str,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """A ClusterRole of these rules and its binding to a ServiceAccount, both named `name`."""
    meta: dict[str, Any] = {"name": name, **({"labels": labels} if labels else {})}
    rbac = "rbac.authorization.k8s.io"
    return [
        {"apiVersion": f"{rbac}/v1", "kind": "ClusterRole", "metadata": meta, "rules": rules},
        {
            "apiVersion": f"{rbac}/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {**meta},
            "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": name},
            "subjects": [
                {"kind": "ServiceAccount", "name": service_account, "namespace": namespace}
            ],
        },
    ]


def write_identity_kubeconfig(
    cluster: ClusterTarget,
    namespace: str,
    service_account: str,
    path: Path,
    *,
    missing: str | None = None,
) -> None:
    """The kubeconfig a local controller runs with (every approach's): the cluster's server and
    CA and a fresh token of its ServiceAccount, owner-only and written atomically (the token is
    a credential). `missing`: the error when the ServiceAccount does not exist (default: the
    API server's answer)."""
    api = cluster.api_client()
    try:
        request = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": TOKEN_SECONDS},
        }
        try:
            answer = client.CoreV1Api(api).create_namespaced_service_account_token(
                service_account, namespace, request
            )
        except client.ApiException as exc:
            if exc.status == 404 and missing is not None:
                raise CompareError(missing) from None
            raise CompareError(
                f"requesting a token for {namespace}/{service_account} failed: "
                f"{exc.status} {exc.reason}"
            ) from None
        token = answer.status.token
        conf = api.configuration
        entry: dict[str, Any] = {"server": conf.host}
        if not conf.verify_ssl:
            entry["insecure-skip-tls-verify"] = True
        elif conf.ssl_ca_cert:
            ca = Path(conf.ssl_ca_cert).read_bytes()
            entry["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    finally:
        api.close()
    user = service_account
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": entry}],
        "users": [{"name": user, "user": {"token": token}}],
        "contexts": [{"name": user, "context": {"cluster": "cluster", "user": user}}],
        "current-context": user,
    }
    # 0600: it holds a token. A new file, or our own earlier one (never a device or a FIFO).
    outputfile.write_text(path, yaml.safe_dump(kubeconfig, sort_keys=False), mode=0o600)
