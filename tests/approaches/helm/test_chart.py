"""charts/webapp rendered by the real helm binary (no cluster): lint, names, labels, schema."""

from __future__ import annotations

import subprocess
from typing import Any

import pytest

from compare.cluster import tool_path
from compare.deploy.charts import CHART_DIR, render, webapp_manifest
from compare.errors import CompareError
from compare.judge import diff_object
from compare.webapp import load_webapp, parse_webapp

SELECTOR_KEYS = {"app.kubernetes.io/name", "app.kubernetes.io/instance"}


def _by_kind(objects: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {obj["kind"]: obj for obj in objects}


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["webapp"]
    return containers[0]


def test_lint_strict_passes() -> None:
    result = subprocess.run(
        [tool_path("helm"), "lint", "--strict", str(CHART_DIR)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "0 chart(s) failed" in result.stdout


def test_lint_strict_rejects_bad_values() -> None:
    result = subprocess.run(
        [tool_path("helm"), "lint", "--strict", str(CHART_DIR), "--set", "replicaCount=-1"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode != 0
    assert "/replicaCount" in result.stdout + result.stderr


def test_default_values_render_a_deployment_a_service_and_a_test_hook() -> None:
    objects = _by_kind(render({}, release="demo"))
    assert set(objects) == {"Deployment", "Service", "Pod"}
    dep, svc = objects["Deployment"], objects["Service"]
    assert dep["metadata"]["name"] == svc["metadata"]["name"] == "demo-webapp"
    labels = dep["metadata"]["labels"]
    assert labels == {
        "helm.sh/chart": "webapp-0.1.0",
        "app.kubernetes.io/name": "webapp",
        "app.kubernetes.io/instance": "demo",
        "app.kubernetes.io/version": "v1",
        "app.kubernetes.io/managed-by": "Helm",
        "app.kubernetes.io/component": "web",
    }
    selector = dep["spec"]["selector"]["matchLabels"]
    assert selector == {"app.kubernetes.io/name": "webapp", "app.kubernetes.io/instance": "demo"}
    pod_labels = dep["spec"]["template"]["metadata"]["labels"]
    assert pod_labels.items() >= {**selector, "app.kubernetes.io/component": "web"}.items()
    assert svc["spec"]["selector"] == selector
    assert svc["spec"]["type"] == "ClusterIP"
    assert svc["spec"]["ports"] == [
        {"name": "http", "port": 8080, "targetPort": "http", "protocol": "TCP"}
    ]
    assert dep["spec"]["replicas"] == 1


def test_production_defaults_security_and_probes() -> None:
    dep = _by_kind(render({}, release="demo"))["Deployment"]
    pod = dep["spec"]["template"]["spec"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert pod["automountServiceAccountToken"] is False
    main = _container(dep)
    sc = main["securityContext"]
    assert sc["runAsNonRoot"] is True
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}
    assert main["ports"] == [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]
    for probe in ("readinessProbe", "livenessProbe"):
        assert main[probe]["httpGet"] == {"path": "/", "port": "http"}
        assert main[probe]["periodSeconds"] >= 1
    assert {"name": "tmp", "mountPath": "/tmp"} in main["volumeMounts"]


def test_probes_can_be_tcp_or_off() -> None:
    tcp = _container(
        _by_kind(render({"probes": {"type": "tcpSocket"}}, release="demo"))["Deployment"]
    )
    assert tcp["readinessProbe"]["tcpSocket"] == {"port": "http"}
    assert "httpGet" not in tcp["livenessProbe"]
    off = _container(_by_kind(render({"probes": {"enabled": False}}, release="d"))["Deployment"])
    assert "readinessProbe" not in off and "livenessProbe" not in off


def test_default_example_renders_to_its_desired_state() -> None:
    webapp = load_webapp()
    objects = _by_kind(webapp_manifest(webapp))
    dep, svc = objects["Deployment"], objects["Service"]
    assert dep["metadata"]["name"] == "webapp-demo"
    main = _container(dep)
    assert main["image"] == "myapp:v1"
    assert main["env"] == [{"name": "LOG_LEVEL", "value": "info"}]
    assert main["resources"] == {"requests": {"cpu": "50m", "memory": "64Mi"}}
    # The rendered objects really differ from another desired state: the check can fail.
    other = parse_webapp(
        {**webapp.model_dump(by_alias=True), "spec": {"image": "myapp:v2", "replicas": 3}}
    )
    other_dep = _by_kind(webapp_manifest(other))["Deployment"]
    found = [(m.path, m.change) for m in diff_object("deployment", other_dep, dep)]
    container = "deployment.spec.template.spec.containers[webapp]"
    assert (f"{container}.image", "changed") in found
    assert (f"{container}.env", "added") in found
    # The Service differs only in its version label (the chart labels objects with the tag).
    svc_found = diff_object("service", _by_kind(webapp_manifest(other))["Service"], svc)
    assert [m.path for m in svc_found] == ["service.metadata.labels[app.kubernetes.io/version]"]


def test_env_values_render_as_strings() -> None:
    values = {"env": [{"name": "A", "value": "1"}, {"name": "B"}, {"name": "C", "value": "yes"}]}
    env = _container(_by_kind(render(values, release="demo"))["Deployment"])["env"]
    assert env == [
        {"name": "A", "value": "1"},
        {"name": "B", "value": ""},
        {"name": "C", "value": "yes"},
    ]


@pytest.mark.parametrize(
    ("release", "values", "fullname", "name_label"),
    [
        ("demo", {}, "demo-webapp", "webapp"),
        ("my-webapp", {}, "my-webapp", "webapp"),
        ("demo", {"fullnameOverride": "shop"}, "shop", "webapp"),
        ("demo", {"nameOverride": "store"}, "demo-store", "store"),
        # 53 + "-" + 12 characters: cut at 63, and the cut must not end in "-".
        ("r" * 53, {"nameOverride": "abcdefgh-ijk"}, "r" * 53 + "-abcdefgh", "abcdefgh-ijk"),
    ],
)
def test_names_follow_helm_create_conventions(
    release: str, values: dict[str, Any], fullname: str, name_label: str
) -> None:
    objects = _by_kind(render(values, release=release))
    dep = objects["Deployment"]
    assert dep["metadata"]["name"] == fullname
    assert len(fullname) <= 63
    assert dep["spec"]["selector"]["matchLabels"] == {
        "app.kubernetes.io/name": name_label,
        "app.kubernetes.io/instance": release,
    }
    assert objects["Service"]["metadata"]["name"] == fullname


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("registry.local:5000/team/shop:1.2.3", "1.2.3"),
        ("registry.local:5000/team/shop", "v1"),
        ("shop:2.0-rc_", "2.0-rc"),
        ("shop@sha256:" + "a" * 64, "v1"),
    ],
)
def test_version_label_is_the_image_tag(image: str, version: str) -> None:
    dep = _by_kind(render({"image": image}, release="demo"))["Deployment"]
    assert dep["metadata"]["labels"]["app.kubernetes.io/version"] == version
    assert dep["spec"]["template"]["metadata"]["labels"]["app.kubernetes.io/version"] == version
    assert _container(dep)["image"] == image


def test_test_hook_fetches_the_service() -> None:
    hook = _by_kind(render({"port": 9000}, release="demo"))["Pod"]
    assert hook["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert hook["metadata"]["name"] == "demo-webapp-test-connection"
    assert hook["spec"]["restartPolicy"] == "Never"
    assert "http://demo-webapp:9000/" in hook["spec"]["containers"][0]["args"]
    assert hook["spec"]["securityContext"]["runAsNonRoot"] is True


def test_pod_labels_and_annotations_are_added_but_cannot_shadow_the_charts() -> None:
    values = {"podLabels": {"team": "shop"}, "podAnnotations": {"note": "x"}}
    template = _by_kind(render(values, release="demo"))["Deployment"]["spec"]["template"]
    assert template["metadata"]["labels"]["team"] == "shop"
    assert template["metadata"]["annotations"] == {"note": "x"}
    reserved = r"^values: podLabels\.app\.kubernetes\.io/name: not allowed \(the chart sets it\)$"
    with pytest.raises(CompareError, match=reserved):
        render({"podLabels": {"app.kubernetes.io/name": "other"}}, release="demo")


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"replicaCount": -1}, "values: replicaCount: must be >= 0"),
        ({"image": None}, "values: image: required field is missing"),
        ({"image": ""}, "values: image: must be at least 1 characters long"),
        ({"image": "Not An Image"}, "values: image: 'Not An Image' has an invalid format"),
        ({"port": 70000}, "values: port: must be <= 65535"),
        ({"port": 0}, "values: port: must be >= 1"),
        ({"replicas": 3}, "values: replicas: unknown key"),
        ({"replicaCount": "3"}, "values: replicaCount: must be integer, got string"),
        ({"replicaCount": 1.5}, "values: replicaCount: must be integer, got number"),
        ({"env": [{"value": "x"}]}, "values: env[0].name: required field is missing"),
        ({"env": [{"name": "A", "valu": "x"}]}, "values: env[0].valu: unknown key"),
        ({"resources": {"limits": {"cpu": "lots"}}}, "values: resources.limits.cpu: 'lots'"),
        ({"securityContext": {"runAsNonroot": True}}, "values: securityContext.runAsNonroot"),
        ({"probes": {"type": "exec"}}, "values: probes.type: value must be one of"),
        ({"fullnameOverride": "Bad_Name"}, "values: fullnameOverride: 'Bad_Name'"),
        ({"port": 0, "replicaCount": -1}, "(and 1 more)"),
    ],
)
def test_schema_rejects_bad_values_through_helm(values: dict[str, Any], expected: str) -> None:
    with pytest.raises(CompareError) as err:
        render(values, release="demo")
    message = str(err.value)
    assert expected in message, message
    assert "\n" not in message
    assert err.value.exit_code == 2
