"""What a real cluster gets: the operator's Helm chart and operator/config (kustomize).

Rendered by the real helm and kubectl binaries, checked against the generated RBAC and
webhooks, their container args parsed by the operator's own CLI, and (on the test cluster)
validated by the API server with a server-side dry run.
"""

from __future__ import annotations

import base64
import subprocess
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from cryptography import x509

from compare.cluster import ClusterTarget, tool_path
from compare.paths import CHARTS_DIR, OPERATOR_DIR
from webapp_operator import rbac
from webapp_operator.admission import webhook_configuration
from webapp_operator.config import parse_args
from webapp_operator.names import SERVICE_ACCOUNT

CHART = CHARTS_DIR / "webapp-operator"


def _run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(args), input=stdin, capture_output=True, text=True, timeout=60, check=False
    )


def _render(*extra: str, namespace: str = "ops") -> list[dict[str, Any]]:
    result = _run(tool_path("helm"), "template", "op", str(CHART), "-n", namespace, *extra)
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _kustomize() -> list[dict[str, Any]]:
    result = _run(tool_path("kubectl"), "kustomize", str(OPERATOR_DIR / "config" / "default"))
    assert result.returncode == 0, result.stderr
    return [doc for doc in yaml.safe_load_all(result.stdout) if doc]


def _by(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [obj for obj in objects if obj["kind"] == kind]


def _args(deployment: dict[str, Any], tmp_path: Path) -> list[str]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    args: list[str] = container["args"]
    # The mounted certificate directory exists only in the pod.
    certs = tmp_path / "certs"
    certs.mkdir(exist_ok=True)
    for name in ("tls.crt", "tls.key"):
        (certs / name).write_text("x")
    return [
        f"--webhook-cert-dir={certs}" if a.startswith("--webhook-cert-dir") else a for a in args
    ]


def test_chart_lints_strict() -> None:
    result = _run(tool_path("helm"), "lint", "--strict", str(CHART))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


@pytest.mark.parametrize(
    "bad",
    ["webhook.failurePolicy=Maybe", "manager.replicas=0", "unknownKey=1", "logLevel=LOUD"],
)
def test_chart_schema_rejects_bad_values(bad: str) -> None:
    result = _run(tool_path("helm"), "lint", "--strict", str(CHART), "--set", bad)
    assert result.returncode != 0
    assert "values don't meet the specifications of the schema" in result.stdout + result.stderr


def _named(objects: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {obj["metadata"]["name"]: obj for obj in _by(objects, kind)}


def _granted(objects: list[dict[str, Any]], account: str) -> dict[str, list[dict[str, Any]]]:
    """Per namespace ("" for cluster-wide), the rules bound to ServiceAccount `account`.
    (`helm template` leaves the release namespace out of namespaced objects: "ops".)"""

    def where(obj: dict[str, Any]) -> str:
        namespaced = obj["kind"] in ("Role", "RoleBinding")
        return str(obj["metadata"].get("namespace") or ("ops" if namespaced else ""))

    by_name = {
        (obj["kind"], obj["metadata"]["name"], where(obj)): obj
        for obj in objects
        if obj["kind"] in ("Role", "ClusterRole")
    }
    granted: dict[str, list[dict[str, Any]]] = {}
    for binding in objects:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        if not any(s["name"] == account for s in binding["subjects"]):
            continue
        namespace = where(binding)
        ref = binding["roleRef"]
        role_ns = namespace if ref["kind"] == "Role" else ""
        granted.setdefault(namespace, []).extend(
            by_name[(ref["kind"], ref["name"], role_ns)]["rules"]
        )
    return granted


def test_chart_renders_the_generated_rbac_and_webhooks(tmp_path: Path) -> None:
    objects = _render()
    roles = _named(objects, "ClusterRole")
    assert roles["op-webapp-operator"]["rules"] == rbac.rules_json(rbac.CLUSTER_RULES)
    assert roles["op-webapp-operator-webhook"]["rules"] == rbac.rules_json(rbac.WEBHOOK_RULES)
    (namespaced,) = _by(objects, "Role")
    assert namespaced["rules"] == rbac.rules_json(rbac.NAMESPACE_RULES)
    for binding in _by(objects, "ClusterRoleBinding"):
        assert binding["subjects"][0]["namespace"] == "ops"

    (config,) = _by(objects, "ValidatingWebhookConfiguration")
    generated = webhook_configuration(b"", url="https://x")["webhooks"]
    for rendered, expected in zip(config["webhooks"], generated, strict=True):
        strip = {"clientConfig"}
        assert {k: v for k, v in rendered.items() if k not in strip} == {
            k: v for k, v in expected.items() if k not in strip
        }
        assert rendered["clientConfig"]["service"] == {
            "name": "op-webapp-operator-webhook",
            "namespace": "ops",
            "path": expected["clientConfig"]["url"].removeprefix("https://x"),
            "port": 443,
        }
    (secret,) = _by(objects, "Secret")
    assert secret["data"]["ca.crt"] == config["webhooks"][0]["clientConfig"]["caBundle"]


def test_chart_deployments_run_valid_operator_commands(tmp_path: Path) -> None:
    objects = _render("--set", "watchNamespaces={a,b}")
    manager, webhook = sorted(_by(objects, "Deployment"), key=lambda d: d["metadata"]["name"])
    assert manager["spec"]["replicas"] == 2 and webhook["spec"]["replicas"] == 2
    leader = parse_args(_args(manager, tmp_path))
    assert leader.lease is not None and leader.lease.duration == 15
    assert leader.namespaces == ("a", "b") and leader.webhook is None
    assert leader.operator_namespace == "ops"
    server = parse_args(_args(webhook, tmp_path))
    assert server.webhook_only and server.lease is None and server.webhook is not None
    assert server.webhook.port == 9443


# Every verb any identity holds, per resource, with the call that needs it. A verb added to
# webapp_operator.rbac without a line here fails; so does one listed here and no longer granted.
AUDITED_VERBS: dict[tuple[str, str], set[str]] = {
    # kopf: list+watch (its watch), patch (finalizer, progress annotations). No get: the
    # reconcile reads the WebApp from the watch. No update: the spec is the user's.
    ("example.com", "webapps"): {"list", "watch", "patch"},
    ("example.com", "webapps/status"): {"patch"},  # the reconcile's status write
    ("example.com", "webapps/finalizers"): {"update"},  # blockOwnerDeletion on children
    # get (read back after a 409 create), list+watch (kopf's indices), create (and the
    # server-side dry-run create that defaults the desired objects), patch (the healing patch),
    # delete (re-created when an immutable field differs: `Reconciler._recreate`).
    ("apps", "deployments"): {"get", "list", "watch", "create", "patch", "delete"},
    ("", "services"): {"get", "list", "watch", "create", "patch", "delete"},
    # A pod changed in place is deleted, or evicted when a PodDisruptionBudget selects it
    # (`pods.PodReplacer`); list+watch: kopf's indices of the pods and their ReplicaSets.
    ("", "pods"): {"list", "watch", "delete"},
    ("", "pods/eviction"): {"create"},
    ("apps", "replicasets"): {"get"},
    ("policy", "poddisruptionbudgets"): {"list"},
    ("", "events"): {"create"},  # kopf.event
    ("apiextensions.k8s.io", "customresourcedefinitions"): {"list", "watch"},  # kopf observer
    ("", "namespaces"): {"list", "watch"},  # kopf's namespace observer, namespaced mode only
    ("coordination.k8s.io", "leases"): {"get", "create", "update"},  # leader.py
    ("", "configmaps"): {"get", "create", "patch"},  # registry.py
}


def test_every_verb_is_audited_and_none_is_broad() -> None:
    rule_sets = (
        rbac.CLUSTER_RULES,
        rbac.RESOURCE_RULES,
        rbac.SCOPED_CLUSTER_RULES,
        rbac.WEBHOOK_RULES,
        rbac.NAMESPACE_RULES,
    )
    granted: dict[tuple[str, str], set[str]] = {}
    for rules in rule_sets:
        for rule in rules:
            assert "*" not in rule.verbs + rule.resources + rule.api_groups
            for group in rule.api_groups:
                for resource in rule.resources:
                    granted.setdefault((group, resource), set()).update(rule.verbs)
    assert granted == AUDITED_VERBS
    # Deletes only what no patch can heal (a changed immutable field, a pod changed in place).
    deleting = {key for key, verbs in granted.items() if "delete" in verbs}
    assert deleting == {("apps", "deployments"), ("", "services"), ("", "pods")}
    for verbs in granted.values():
        assert not verbs & {"deletecollection", "escalate", "bind", "impersonate"}


def test_webhook_runs_under_its_own_identity_that_may_only_read_crds(tmp_path: Path) -> None:
    for objects, manager_sa, webhook_sa in (
        (_render(), "op-webapp-operator", "op-webapp-operator-webhook"),
        (_kustomize(), SERVICE_ACCOUNT, rbac.WEBHOOK_SERVICE_ACCOUNT),
    ):
        deployments = {
            d["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/component"]: d
            for d in _by(objects, "Deployment")
        }
        pods = {k: d["spec"]["template"]["spec"] for k, d in deployments.items()}
        assert pods["manager"]["serviceAccountName"] == manager_sa
        assert pods["webhook"]["serviceAccountName"] == webhook_sa
        assert webhook_sa in _named(objects, "ServiceAccount")
        assert _granted(objects, webhook_sa) == {"": rbac.rules_json(rbac.WEBHOOK_RULES)}
        # It serves every namespace's admission itself: kopf need not observe namespaces.
        assert parse_args(_args(deployments["webhook"], tmp_path)).namespaces == ()


def test_namespaced_install_binds_roles_in_the_watched_namespaces_only(tmp_path: Path) -> None:
    objects = _render("--set", "watchNamespaces={a,b}")
    granted = _granted(objects, "op-webapp-operator")
    resource_rules = rbac.rules_json(rbac.RESOURCE_RULES)
    assert granted == {
        "": rbac.rules_json(rbac.SCOPED_CLUSTER_RULES),
        "a": resource_rules,
        "b": resource_rules,
        "ops": rbac.rules_json(rbac.NAMESPACE_RULES),
    }
    # The only cluster-wide grants are cluster-scoped kinds.
    for rule in granted[""]:
        assert set(rule["resources"]) <= {"customresourcedefinitions", "namespaces"}
    # The webhook judges the watched namespaces' WebApps only.
    (config,) = _by(objects, "ValidatingWebhookConfiguration")
    for hook in config["webhooks"]:
        assert hook["namespaceSelector"] == {
            "matchExpressions": [
                {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}
            ]
        }
    # Every namespace: one ClusterRole, no Role outside the operator's namespace.
    everywhere = _granted(_render(), "op-webapp-operator")
    assert everywhere == {
        "": rbac.rules_json(rbac.CLUSTER_RULES),
        "ops": rbac.rules_json(rbac.NAMESPACE_RULES),
    }
    (config,) = _by(_render(), "ValidatingWebhookConfiguration")
    assert all("namespaceSelector" not in hook for hook in config["webhooks"])


def test_chart_records_the_certificate_expiry_and_refuses_a_window_beyond_it() -> None:
    (secret,) = _by(_render(), "Secret")
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    recorded = datetime.fromisoformat(
        secret["metadata"]["annotations"]["webapp-operator.example.com/not-after"]
    )
    assert timedelta(0) <= cert.not_valid_after_utc - recorded < timedelta(minutes=1)
    result = _run(
        tool_path("helm"),
        "template",
        "op",
        str(CHART),
        "--set",
        "webhook.certificateDays=30",
        "--set",
        "webhook.certificateRenewBeforeDays=30",
    )
    assert result.returncode != 0
    assert "must be less than webhook.certificateDays" in result.stderr


def test_every_hash_the_chart_renders_is_a_quoted_string() -> None:
    """A truncated hash may be all digits (one render in ~2,000: `8866792502161597`), which
    YAML reads as a number and the API server refuses in an annotation ("expected string").
    Every template expression that ends in a hash is quoted; the rendered one is a string."""
    unquoted = [
        f"{path.name}: {line.strip()}"
        for path in sorted((CHART / "templates").glob("*"))
        for line in path.read_text().splitlines()
        if ("sha256sum" in line or "sha1sum" in line or "adler32sum" in line)
        and not line.rstrip().endswith("| quote }}")
    ]
    assert not unquoted, unquoted
    for deployment in _by(_render(), "Deployment"):
        annotations = deployment["spec"]["template"]["metadata"].get("annotations") or {}
        assert all(isinstance(v, str) for v in annotations.values()), annotations


def test_kustomize_config_is_complete_and_valid_for_the_operator(tmp_path: Path) -> None:
    objects = _kustomize()
    kinds = sorted(obj["kind"] for obj in objects)
    assert kinds == sorted(
        [
            "ClusterRole",
            "ClusterRole",
            "ClusterRoleBinding",
            "ClusterRoleBinding",
            "CustomResourceDefinition",
            "Deployment",
            "Deployment",
            "Namespace",
            "Role",
            "RoleBinding",
            "Service",
            "ServiceAccount",
            "ServiceAccount",
            "ValidatingWebhookConfiguration",
        ]
    )
    deployments = {d["metadata"]["name"]: d for d in _by(objects, "Deployment")}
    assert deployments["webapp-operator"]["spec"]["replicas"] == 2
    manager = parse_args(_args(deployments["webapp-operator"], tmp_path))
    assert manager.lease is not None and manager.webhook is None
    server = parse_args(_args(deployments["webapp-operator-webhook"], tmp_path))
    assert server.webhook_only


@pytest.mark.cluster
def test_rendered_objects_pass_a_server_side_dry_run(
    cluster: ClusterTarget, namespace: str
) -> None:
    docs = _render(namespace=namespace)
    result = _run(
        tool_path("kubectl"),
        *cluster.kubectl_args(),
        "apply",
        "--dry-run=server",
        "-n",
        namespace,
        "-f",
        "-",
        stdin=yaml.safe_dump_all(docs),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("(server dry run)") == len(docs)
