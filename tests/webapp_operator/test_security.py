"""Security of a real install, on the test cluster's API server (issue 10, point 9):

- every identity may do exactly what `webapp_operator.rbac` lists and nothing more, measured
  with SelfSubjectRulesReviews against an identity that has no bindings at all;
- a namespaced install binds Roles in the watched namespaces, not a ClusterRole, and the
  operator works under it;
- the webhook runs under its own identity, which can read CRDs and nothing else, and serves
  admission under it without a single refused request;
- the chart's webhook certificate is renewed by `helm upgrade` when it expires within the
  renewal window, and kept otherwise.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from cryptography import x509
from kubernetes import client, config

from compare.approaches.operator.controllers import OperatorHandle, operator_status, stop_operator
from compare.cluster import ClusterTarget, tool_path
from compare.deploy.local import free_port
from compare.paths import CHARTS_DIR
from compare.webapp import API_GROUP, API_VERSION, PLURAL
from tests.helpers import eventually
from webapp_operator import rbac
from webapp_operator.certs import generate_tls
from webapp_operator.names import FINALIZER, OPERATOR_NAMESPACE, SERVICE_ACCOUNT

from .helpers import get_deployment, get_webapp

pytestmark = pytest.mark.cluster

CHART = CHARTS_DIR / "webapp-operator"
RELEASE = "sec"
FULLNAME = f"{RELEASE}-webapp-operator"
NOT_AFTER = "webapp-operator.example.com/not-after"
# What kopf logs for every refused request it retries (and a 403 the reconcile would report).
REFUSED = ("Request attempt", "Forbidden", "forbidden", "Not enough permissions")

Grant = tuple[str, str, str, str]  # (api group, resource, resource name or "", verb)


# -- identities ---------------------------------------------------------------------------------


def _kubeconfig_for(
    api: client.ApiClient, namespace: str, account: str, path: Path, *, create: bool = False
) -> Path:
    """A kubeconfig holding a short-lived token of `namespace/account`."""
    core = client.CoreV1Api(api)
    if create:
        core.create_namespaced_service_account(namespace, {"metadata": {"name": account}})
    answer = core.create_namespaced_service_account_token(
        account, namespace, {"spec": {"expirationSeconds": 3600}}
    )
    conf = api.configuration
    cluster: dict[str, Any] = {"server": conf.host}
    if conf.ssl_ca_cert:
        ca = Path(conf.ssl_ca_cert).read_bytes()
        cluster["certificate-authority-data"] = base64.b64encode(ca).decode("ascii")
    kubeconfig = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": cluster}],
        "users": [{"name": account, "user": {"token": answer.status.token}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": account}}],
        "current-context": "c",
    }
    path.write_text(yaml.safe_dump(kubeconfig))
    path.chmod(0o600)
    return path


def _grants(kubeconfig: Path, namespace: str) -> set[Grant]:
    """Everything this identity may do in `namespace` (cluster-wide grants included)."""
    api = config.new_client_from_config(config_file=str(kubeconfig))
    try:
        review = client.AuthorizationV1Api(api).create_self_subject_rules_review(
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SelfSubjectRulesReview",
                "spec": {"namespace": namespace},
            }
        )
    finally:
        api.close()
    grants: set[Grant] = set()
    for rule in review.status.resource_rules or []:
        for group in rule.api_groups or [""]:
            for resource in rule.resources or []:
                for name in rule.resource_names or [""]:
                    grants |= {(group, resource, name, verb) for verb in rule.verbs}
    return grants


def _expected(rules: tuple[rbac.Rule, ...]) -> set[Grant]:
    return {
        (group, resource, name, verb)
        for rule in rules
        for group in rule.api_groups
        for resource in rule.resources
        for name in rule.resource_names or ("",)
        for verb in rule.verbs
    }


@pytest.fixture(scope="module")
def baseline(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """An identity with no bindings: what every authenticated user may do anyway."""
    account = f"nobody-{uuid.uuid4().hex[:6]}"
    path = tmp_path_factory.mktemp("baseline") / "kubeconfig.yaml"
    _kubeconfig_for(api, OPERATOR_NAMESPACE, account, path, create=True)
    yield path
    client.CoreV1Api(api).delete_namespaced_service_account(account, OPERATOR_NAMESPACE)


def _own_grants(kubeconfig: Path, baseline: Path, namespace: str) -> set[Grant]:
    return _grants(kubeconfig, namespace) - _grants(baseline, namespace)


# -- processes ---------------------------------------------------------------------------------


@contextmanager
def _operator_process(log: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """`python -m webapp_operator ARGS`, stopped (SIGTERM, then SIGKILL) afterwards."""
    with log.open("wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "webapp_operator", *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=15)


def _health(port: int) -> dict[str, Any]:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=1) as answer:
            data: dict[str, Any] = json.loads(answer.read())
            return data
    except OSError:
        return {}


def _refusals(log: Path) -> list[str]:
    return [line for line in log.read_text().splitlines() if any(r in line for r in REFUSED)]


# -- helm --------------------------------------------------------------------------------------


def _helm(cluster: ClusterTarget, *args: str) -> str:
    cmd = [tool_path("helm"), "--kubeconfig", str(cluster.kubeconfig), *args]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, f"helm {args[0]}: {result.stderr}"
    return result.stdout


@contextmanager
def _release(cluster: ClusterTarget, namespace: str, *values: str) -> Iterator[None]:
    """The operator chart installed in `namespace`; uninstalled afterwards (its cluster-scoped
    objects, the webhook configuration among them, must not outlive the test)."""
    # failurePolicy Ignore: the fake nodes run no webhook server; nothing else must be refused.
    sets = ["--set", "webhook.failurePolicy=Ignore", *(a for v in values for a in ("--set", v))]
    _helm(cluster, "install", RELEASE, str(CHART), "-n", namespace, *sets)
    try:
        yield
    finally:
        _helm(cluster, "uninstall", RELEASE, "-n", namespace)


# -- RBAC of every identity ---------------------------------------------------------------------


def test_the_local_operator_identity_may_do_exactly_the_generated_rules(
    cluster: ClusterTarget,
    api: client.ApiClient,
    operator: OperatorHandle,
    baseline: Path,
    tmp_path: Path,
    namespace: str,
) -> None:
    """config/rbac, as `compare deploy operator` installs it: the manager and the webhook."""
    manager = _kubeconfig_for(api, OPERATOR_NAMESPACE, SERVICE_ACCOUNT, tmp_path / "m.yaml")
    own = _expected(rbac.CLUSTER_RULES)
    assert _own_grants(manager, baseline, namespace) == own
    in_operator_namespace = _own_grants(manager, baseline, OPERATOR_NAMESPACE)
    assert in_operator_namespace == own | _expected(rbac.NAMESPACE_RULES)

    webhook = _kubeconfig_for(
        api, OPERATOR_NAMESPACE, rbac.WEBHOOK_SERVICE_ACCOUNT, tmp_path / "w.yaml"
    )
    for where in (namespace, OPERATOR_NAMESPACE):
        assert _own_grants(webhook, baseline, where) == _expected(rbac.WEBHOOK_RULES)


def test_namespaced_install_binds_roles_only_where_it_watches(
    cluster: ClusterTarget,
    api: client.ApiClient,
    baseline: Path,
    tmp_path: Path,
    namespace: str,
) -> None:
    core = client.CoreV1Api(api)
    watched, elsewhere = f"{namespace}-w", f"{namespace}-x"
    for name in (watched, elsewhere):
        core.create_namespace({"metadata": {"name": name}})
    try:
        with _release(cluster, namespace, f"watchNamespaces={{{watched}}}"):
            manager = _kubeconfig_for(api, namespace, FULLNAME, tmp_path / "m.yaml")
            cluster_scoped = _expected(rbac.SCOPED_CLUSTER_RULES)
            assert _own_grants(manager, baseline, watched) == cluster_scoped | _expected(
                rbac.RESOURCE_RULES
            )
            assert _own_grants(manager, baseline, elsewhere) == cluster_scoped
            assert _own_grants(manager, baseline, namespace) == cluster_scoped | _expected(
                rbac.NAMESPACE_RULES
            )
            webhook = _kubeconfig_for(api, namespace, f"{FULLNAME}-webhook", tmp_path / "w.yaml")
            assert _own_grants(webhook, baseline, watched) == _expected(rbac.WEBHOOK_RULES)
            assert _own_grants(webhook, baseline, namespace) == _expected(rbac.WEBHOOK_RULES)
    finally:
        for name in (watched, elsewhere):
            core.delete_namespace(name, propagation_policy="Background")


@pytest.mark.usefixtures("restore_operator")
def test_namespaced_operator_works_under_the_charts_roles(
    cluster: ClusterTarget,
    api: client.ApiClient,
    operator: OperatorHandle,
    tmp_path: Path,
    namespace: str,
) -> None:
    """The manager of a namespaced release, run as its ServiceAccount: it starts watching at
    once (kopf may observe namespaces), reconciles in its namespace without one refused
    request, and leaves other namespaces alone. The shared all-namespaces operator is stopped
    meanwhile; this process also serves the cluster's (local) webhook in its place."""
    # The operator as it is now (an earlier test may have replaced it: new port, new certs).
    current = operator_status(cluster) or operator
    assert current.webhook_url is not None
    webhook_port = urlsplit(current.webhook_url).port
    certs = current.state_dir / "certs"
    stop_operator(cluster)
    core = client.CoreV1Api(api)
    custom = client.CustomObjectsApi(api)
    watched, elsewhere = f"{namespace}-w", f"{namespace}-x"
    for name in (watched, elsewhere):
        core.create_namespace({"metadata": {"name": name}})
    webapp = {
        "apiVersion": f"{API_GROUP}/{API_VERSION}",
        "kind": "WebApp",
        "metadata": {"name": "shop"},
        "spec": {"replicas": 1, "image": "shop:v1", "port": 8080},
    }
    try:
        with _release(cluster, namespace, f"watchNamespaces={{{watched}}}"):
            kubeconfig = _kubeconfig_for(api, namespace, FULLNAME, tmp_path / "m.yaml")
            port, log = free_port(), tmp_path / "operator.log"
            args = (
                f"--namespace={watched}",
                f"--operator-namespace={namespace}",
                f"--kubeconfig={kubeconfig}",
                "--no-leader-elect",
                "--webhook-addr=127.0.0.1",
                f"--webhook-port={webhook_port}",
                f"--webhook-cert-dir={certs}",
                "--health-addr=127.0.0.1",
                f"--health-port={port}",
            )
            with _operator_process(log, *args):
                eventually(lambda: _health(port).get("ready"), what="the namespaced operator")
                for where in (watched, elsewhere):
                    custom.create_namespaced_custom_object(
                        API_GROUP, API_VERSION, where, PLURAL, webapp
                    )
                started = time.monotonic()
                eventually(
                    lambda: get_deployment(api, watched, "shop"),
                    timeout=20,
                    what="the Deployment in the watched namespace",
                )
                # kopf's own write (its finalizer) and the reconcile's (the status) went through.
                body = get_webapp(api, watched, "shop") or {}
                assert FINALIZER in body["metadata"].get("finalizers", [])
                eventually(
                    lambda: (get_webapp(api, watched, "shop") or {}).get("status"),
                    what="the status",
                )
                print(f"namespaced operator reconciled in {time.monotonic() - started:.2f}s")
                other = get_webapp(api, elsewhere, "shop") or {}
                assert not other["metadata"].get("finalizers")
                assert get_deployment(api, elsewhere, "shop") is None
                assert _refusals(log) == []
                # Deleting runs the finalizer (the registry in the release namespace).
                custom.delete_namespaced_custom_object(
                    API_GROUP, API_VERSION, watched, PLURAL, "shop"
                )
                eventually(
                    lambda: get_webapp(api, watched, "shop") is None, what="the finalizer to run"
                )
                assert _refusals(log) == []
    finally:
        for name in (watched, elsewhere):
            core.delete_namespace(name, propagation_policy="Background")


def test_webhook_serves_admission_under_its_own_identity_without_a_refused_request(
    cluster: ClusterTarget,
    api: client.ApiClient,
    operator: OperatorHandle,
    tmp_path: Path,
    namespace: str,
) -> None:
    """`--webhook-only` as config/webhook/server.yaml runs it: its own ServiceAccount, which
    may read CRDs and nothing else — and kopf, in that mode, asks for nothing more."""
    kubeconfig = _kubeconfig_for(
        api, OPERATOR_NAMESPACE, rbac.WEBHOOK_SERVICE_ACCOUNT, tmp_path / "w.yaml"
    )
    bundle = generate_tls(["127.0.0.1"])
    certs = tmp_path / "certs"
    certs.mkdir()
    (certs / "tls.crt").write_bytes(bundle.cert_pem)
    (certs / "tls.key").write_bytes(bundle.key_pem)
    (certs / "ca.crt").write_bytes(bundle.ca_pem)
    health, port, log = free_port(), free_port(), tmp_path / "webhook.log"
    args = (
        "--webhook-only",
        "--all-namespaces",
        f"--kubeconfig={kubeconfig}",
        "--webhook-addr=127.0.0.1",
        f"--webhook-port={port}",
        f"--webhook-cert-dir={certs}",
        "--health-addr=127.0.0.1",
        f"--health-port={health}",
    )
    with _operator_process(log, *args):
        eventually(lambda: _health(health).get("ready"), what="the webhook replica")
        review = {
            "apiVersion": "admission.k8s.io/v1",
            "kind": "AdmissionReview",
            "request": {
                "uid": "u-1",
                "kind": {"group": API_GROUP, "version": API_VERSION, "kind": "WebApp"},
                "resource": {"group": API_GROUP, "version": API_VERSION, "resource": PLURAL},
                "operation": "CREATE",
                "userInfo": {"username": "tester"},
                "name": "x",
                "namespace": namespace,
                "object": {
                    "apiVersion": f"{API_GROUP}/{API_VERSION}",
                    "kind": "WebApp",
                    "metadata": {"name": "x", "namespace": namespace},
                    "spec": {"image": "shop:v1", "replicas": 99},
                },
            },
        }
        tls = ssl.create_default_context(cafile=str(certs / "ca.crt"))
        sent = urllib.request.Request(
            f"https://127.0.0.1:{port}/validate-webapp",
            data=json.dumps(review).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(sent, context=tls, timeout=5) as answer:
            response = json.loads(answer.read())["response"]
        assert response["allowed"] is False
        assert "exceeds the ceiling of 50" in response["status"]["message"]
        # kopf's CRD listing and watch happen at start; give a refused retry time to show.
        time.sleep(2)
    assert _refusals(log) == []


# -- the chart's webhook certificate -------------------------------------------------------------


def _secret(api: client.ApiClient, namespace: str) -> dict[str, Any]:
    raw = client.CoreV1Api(api).read_namespaced_secret(
        f"{FULLNAME}-webhook-tls", namespace, _preload_content=False
    )
    data: dict[str, Any] = json.loads(raw.data)
    return data


def _ca_bundle(api: client.ApiClient) -> list[x509.Certificate]:
    config = client.AdmissionregistrationV1Api(api).read_validating_webhook_configuration(
        FULLNAME, _preload_content=False
    )
    bundles = {hook["clientConfig"]["caBundle"] for hook in json.loads(config.data)["webhooks"]}
    assert len(bundles) == 1
    return x509.load_pem_x509_certificates(base64.b64decode(bundles.pop()))


def _cert(secret: dict[str, Any], key: str = "tls.crt") -> x509.Certificate:
    return x509.load_pem_x509_certificate(base64.b64decode(secret["data"][key]))


def _plant(
    api: client.ApiClient, namespace: str, *, days_left: int, annotate: bool
) -> dict[str, Any]:
    """Replace the release's certificate with one that expires in `days_left` days, annotated
    as the chart annotates its own (or not at all, as an older chart left it); the Secret as
    planted."""
    now = datetime.now(UTC)
    issued = now - timedelta(days=365 - days_left)
    service = f"{FULLNAME}-webhook"
    bundle = generate_tls([service, f"{service}.{namespace}.svc"], now=issued)
    secret = _secret(api, namespace)
    annotations = secret["metadata"].get("annotations") or {}
    if annotate:
        not_after = x509.load_pem_x509_certificate(bundle.cert_pem).not_valid_after_utc
        annotations[NOT_AFTER] = not_after.strftime("%Y-%m-%dT%H:%M:%SZ")
    else:
        annotations.pop(NOT_AFTER, None)
    data = {
        key: base64.b64encode(pem).decode("ascii")
        for key, pem in (
            ("ca.crt", bundle.ca_pem),
            ("tls.crt", bundle.cert_pem),
            ("tls.key", bundle.key_pem),
        )
    }
    meta = secret["metadata"]
    # Written as an earlier `helm install` would have: Helm's own server-side apply.
    applied = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": meta["name"], "labels": meta["labels"], "annotations": annotations},
        "type": secret["type"],
        "data": data,
    }
    client.CoreV1Api(api).patch_namespaced_secret(
        meta["name"],
        namespace,
        applied,
        field_manager="helm",
        force=True,
        _content_type="application/apply-patch+yaml",
    )
    return _secret(api, namespace)


def test_webhook_certificate_is_renewed_on_upgrade_when_it_expires_soon(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    with _release(cluster, namespace, f"watchNamespaces={{{namespace}}}"):
        upgrade = (
            "upgrade",
            RELEASE,
            str(CHART),
            "-n",
            namespace,
            "--reuse-values",
        )
        first = _secret(api, namespace)
        cert, ca = _cert(first), _cert(first, "ca.crt")
        cert.verify_directly_issued_by(ca)
        # The annotation the renewal reads is never later than the real expiry, and close to it.
        recorded = datetime.fromisoformat(first["metadata"]["annotations"][NOT_AFTER])
        assert timedelta(0) <= cert.not_valid_after_utc - recorded < timedelta(minutes=1)
        assert cert.not_valid_after_utc - datetime.now(UTC) > timedelta(days=364)
        assert _ca_bundle(api) == [ca]

        # Fresh: an upgrade keeps it (and the caBundle), so the webhook pods do not restart.
        _helm(cluster, *upgrade)
        assert _secret(api, namespace)["data"] == first["data"]
        assert _ca_bundle(api) == [ca]

        # 40 days left (outside the 30-day window): still kept.
        planted = _plant(api, namespace, days_left=40, annotate=True)
        _helm(cluster, *upgrade)
        assert _secret(api, namespace)["data"] == planted["data"]

        # 10 days left: renewed, and the caBundle trusts both CAs during the rollout.
        expiring = _plant(api, namespace, days_left=10, annotate=True)
        _helm(cluster, *upgrade)
        renewed = _secret(api, namespace)
        new_cert, new_ca = _cert(renewed), _cert(renewed, "ca.crt")
        assert new_cert != _cert(expiring)
        new_cert.verify_directly_issued_by(new_ca)
        assert new_cert.not_valid_after_utc - datetime.now(UTC) > timedelta(days=364)
        san = new_cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert f"{FULLNAME}-webhook.{namespace}.svc" in san.get_values_for_type(x509.DNSName)
        assert _ca_bundle(api) == [new_ca, _cert(expiring, "ca.crt")]
        # The next upgrade keeps the new certificate and drops the old CA.
        _helm(cluster, *upgrade)
        assert _secret(api, namespace)["data"] == renewed["data"]
        assert _ca_bundle(api) == [new_ca]

        # A Secret whose expiry is unknown (an older chart's) is renewed too.
        unknown = _plant(api, namespace, days_left=200, annotate=False)
        _helm(cluster, *upgrade)
        assert _cert(_secret(api, namespace)) != _cert(unknown)
