"""Any chart as the app under test: the operator's own chart, named by a target file, rendered
before anything is installed (a chart that does not render is one line), installed as a
release, and judged closed-world on every object of its manifest - ServiceAccounts, RBAC, the
webhook's Secret and configuration, Deployments - against the real API server."""

from __future__ import annotations

import base64
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from compare.approaches import desired_objects, load_target
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import (
    desired_of,
    install_target,
    release_desired,
    render_target,
    uninstall_target,
)
from compare.deploy.ownership import helm_applied
from compare.errors import EXIT_USAGE, CompareError
from compare.judge import mismatches, problems, read, wait_until_holds
from compare.paths import CHARTS_DIR, EXAMPLES_DIR
from compare.webapp import load_webapp

NEW_KEY = "an-attacker-key-never-printed"


def _target_file(folder: Path, namespace: str, release: str, **values: Any) -> Path:
    base = {
        # Only its own namespace (Roles there, the webhook limited to it), one pod each.
        "watchNamespaces": [namespace],
        "manager": {"replicas": 1},
        "webhook": {"replicas": 1, "failurePolicy": "Ignore"},
    }
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "webapp-operator",
        "namespace": namespace,
        "helm": {
            "chart": {"path": str(CHARTS_DIR / "webapp-operator")},
            "release": release,
            "values": {**base, **values},
        },
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_chart_that_does_not_render_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = _target_file(
        tmp_path, "shop", "op", webhook={"certificateDays": 10, "certificateRenewBeforeDays": 20}
    )
    target = load_target(path)
    with pytest.raises(CompareError) as caught:
        render_target(target, target.chart_arm("helm"), "shop")
    message = caught.value.message
    assert message.startswith(f"{path}: helm: helm template op failed: execution error at ")
    assert message.endswith(
        "webhook.certificateRenewBeforeDays (20) must be less than webhook.certificateDays (10):"
        " every upgrade would renew the certificate"
    )
    assert "\n" not in message and caught.value.exit_code == EXIT_USAGE
    # The chart's values.schema.json: named as a field of the target file.
    path = _target_file(tmp_path, "shop", "op", logLevel="LOUD")
    target = load_target(path)
    with pytest.raises(CompareError) as caught:
        render_target(target, target.chart_arm("helm"), "shop")
    assert caught.value.message.startswith(f"{path}: helm.values.logLevel: ")
    assert caught.value.exit_code == EXIT_USAGE


def test_the_rendered_manifest_holds_every_kind_of_the_chart(tmp_path: Path) -> None:
    target = load_target(_target_file(tmp_path, "shop", "op"))
    kinds = {obj["kind"] for obj in render_target(target, target.chart_arm("helm"), "shop")}
    assert kinds == {
        "ServiceAccount",
        "Secret",
        "ClusterRole",
        "ClusterRoleBinding",
        "Role",
        "RoleBinding",
        "Service",
        "Deployment",
        "ValidatingWebhookConfiguration",
    }


@pytest.mark.cluster
def test_any_chart_is_judged_closed_world_on_every_object_of_its_release(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    release = f"wop-{uuid.uuid4().hex[:6]}"  # its cluster-scoped objects are named after it
    target = load_target(_target_file(tmp_path, namespace, release))
    install_target(cluster, target, target.chart_arm("helm"), namespace, timeout=90)
    try:
        desired = release_desired(cluster, api, target, target.chart_arm("helm"), namespace)
        assert {item.kind for item in desired.items} >= {
            "Secret",
            "Role",
            "ClusterRole",
            "ValidatingWebhookConfiguration",
        }
        # Installed and rolled out: every object of the manifest holds closed-world.
        assert wait_until_holds(api, namespace, desired, timeout=90) == []
        manager = f"{release}-webapp-operator"
        core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
        secret = desired.of_kind("Secret")[0].name
        leader_role = f"{manager}-leader-election"
        # One field of each kind, changed in the live cluster.
        core.patch_namespaced_service_account(
            manager, namespace, {"automountServiceAccountToken": False}
        )
        role = rbac.read_namespaced_role(leader_role, namespace)
        role.rules[0].verbs = [*role.rules[0].verbs, "deletecollection"]
        rbac.replace_namespaced_role(leader_role, namespace, role)
        encoded = base64.b64encode(NEW_KEY.encode()).decode()
        core.patch_namespaced_secret(secret, namespace, {"data": {"tls.key": encoded}})
        client.AppsV1Api(api).patch_namespaced_deployment(
            manager,
            namespace,
            {"spec": {"template": {"spec": {"terminationGracePeriodSeconds": 5}}}},
        )
        found = mismatches(desired, read(api, namespace, desired.kinds))
        assert sorted((m.path, m.change) for m in found) == [
            (f"deployment/{manager}.spec.template.spec.terminationGracePeriodSeconds", "changed"),
            (f"role/{leader_role}.rules[0].verbs", "changed"),
            ("secret.data[tls.key]", "changed"),
            (f"serviceaccount/{manager}.automountServiceAccountToken", "added"),
        ]
        text = "\n".join(problems(desired, read(api, namespace, desired.kinds)))
        assert NEW_KEY not in text and encoded not in text
        assert "secret.data[tls.key]: want 'sha256:" in text
        # A deleted object of the release is missing.
        rbac.delete_namespaced_role(leader_role, namespace)
        after = [str(m) for m in mismatches(desired, read(api, namespace, desired.kinds))]
        assert f"role/{leader_role}: missing" in after
    finally:
        uninstall_target(cluster, target.chart_arm("helm"), namespace, timeout=60)
    # Its cluster-scoped objects went with the release.
    names = [r.metadata.name for r in client.RbacAuthorizationV1Api(api).list_cluster_role().items]
    assert not [name for name in names if name.startswith(release)]


@pytest.mark.cluster
def test_the_webapp_example_desires_exactly_what_the_built_in_helm_path_does(
    api: client.ApiClient, namespace: str
) -> None:
    target = load_target(EXAMPLES_DIR / "target-webapp.yaml")
    install = target.chart_arm("helm")
    rendered = render_target(target, install, namespace)
    from_target = desired_of(
        api, namespace, helm_applied(rendered, release=install.release, namespace=namespace)
    )
    built_in = desired_objects(api, "helm", load_webapp(), namespace)
    assert [(i.kind, i.name, i.defaulted) for i in from_target.items] == [
        (i.kind, i.name, i.defaulted) for i in built_in.items
    ]
