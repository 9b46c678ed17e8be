"""`compare deploy helm`, `compare undeploy helm` and `compare status` through the real CLI."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import get
from compare.approaches.operator import builtin
from compare.approaches.operator.controllers import install_operator
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.deploy.charts import list_releases
from compare.target.builtin import BUILTIN_CHART, webapp_named
from compare.webapp import API_GROUP, API_VERSION, DEFAULT_APP, PLURAL, to_cr
from tests.helpers import make_webapp

pytestmark = pytest.mark.cluster

runner = CliRunner()


def kube_args(cluster: ClusterTarget) -> list[str]:
    return ["--kubeconfig", str(cluster.kubeconfig)]


def _lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.strip()]


def _app_file(tmp_path: Path, spec: dict[str, object] | str) -> Path:
    path = tmp_path / "app.yaml"
    if isinstance(spec, str):
        path.write_text(spec)
    else:
        body = {"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": {"name": "shop"}}
        path.write_text(yaml.safe_dump({**body, "spec": spec}))
    return path


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"replicas": 2}, "spec.image: required field is missing"),
        ({"image": "shop:v1", "replicas": -1}, "spec.replicas: Input should be greater than"),
        ({"image": "shop:v1", "port": 70000}, "spec.port: Input should be less than"),
        ({"image": "shop:v1", "port": 0}, "spec.port: Input should be greater than"),
        ({"image": "shop:v1", "replica": 2}, "spec.replica: unknown field"),
        ("spec: [oops\n", "not valid YAML at line 2"),
    ],
)
def test_bad_app_file_is_one_line_exit_2_and_changes_nothing(
    cluster: ClusterTarget,
    api: client.ApiClient,
    tmp_path: Path,
    spec: dict[str, object] | str,
    expected: str,
) -> None:
    path = _app_file(tmp_path, spec)
    namespace = f"never-{tmp_path.name[-12:].lower().replace('_', '-')}".strip("-")
    result = runner.invoke(
        app,
        ["deploy", "helm", "--app", str(path), "-n", namespace, *kube_args(cluster)],
    )
    assert result.exit_code == 2, result.output
    lines = _lines(result.output)
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: {path}: {expected}"), lines[0]
    assert "Traceback" not in result.output
    with pytest.raises(client.ApiException) as missing:
        client.CoreV1Api(api).read_namespace(namespace)
    assert missing.value.status == 404


def test_bad_flags_and_names_are_usage_errors(cluster: ClusterTarget, tmp_path: Path) -> None:
    kube = kube_args(cluster)
    bad_release = runner.invoke(app, ["deploy", "helm", "--release", "Bad_Name", *kube])
    assert bad_release.exit_code == 2
    assert _lines(bad_release.output) == [
        "error: release 'Bad_Name': must be a lower-case DNS name of at most 53 characters"
    ]
    bad_ns = runner.invoke(app, ["status", "-n", "No/Such", *kube])
    assert bad_ns.exit_code == 2 and "namespace 'No/Such'" in bad_ns.output
    unknown = runner.invoke(app, ["deploy", "helm", "--replicas", "3"])
    assert unknown.exit_code == 2 and "No such option" in unknown.output
    owned = tmp_path / "extra.yaml"
    owned.write_text("replicaCount: 9\n")
    result = runner.invoke(app, ["deploy", "helm", "-f", str(owned), *kube])
    assert result.exit_code == 2
    assert _lines(result.output) == [
        f"error: {owned}: replicaCount is set from the WebApp manifest; change it there instead"
    ]


def test_unreachable_cluster_is_one_line(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
                "users": [{"name": "u", "user": {"token": "x"}}],
                "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
                "current-context": "x",
            }
        )
    )
    for command in (["deploy", "helm"], ["undeploy", "helm"], ["status"]):
        result = runner.invoke(app, [*command, "--kubeconfig", str(kubeconfig)])
        assert result.exit_code == 2, result.output
        assert len(_lines(result.output)) == 1, result.output
        assert "127.0.0.1:1 is unreachable" in result.output


def test_deploy_status_drift_and_undeploy(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    kube = kube_args(cluster)
    extra = tmp_path / "extra.yaml"
    extra.write_text(
        "probes:\n  enabled: true\n  type: tcpSocket\n  path: /\n  readiness: {}\n  liveness: {}\n"
    )
    # Global options before the subcommand, command options after it: both work.
    deployed = runner.invoke(
        app, [*kube, "deploy", "helm", "-n", namespace, "--app", str(DEFAULT_APP), "-f", str(extra)]
    )
    assert deployed.exit_code == 0, deployed.output
    assert (
        f"helm release webapp-demo (revision 1, chart {BUILTIN_CHART}, version 0.1.0) in"
        " namespace"
        f" {namespace}: desired state holds after"
    ) in deployed.output
    assert "Deployment webapp-demo: 3/3 ready, myapp:v1" in deployed.output
    assert "LOG_LEVEL=info" in deployed.output

    status = runner.invoke(app, ["status", "-n", namespace, *kube])
    assert status.exit_code == 0, status.output
    row = next(line for line in status.output.splitlines() if line.startswith("helm"))
    assert row.split()[:5] == ["helm", "webapp-demo", namespace, "3/3", "myapp:v1"]
    assert row.rstrip().endswith("holds")
    assert "WebApp resources: none" in status.output

    # Helm does not notice drift: status shows it until the next upgrade.
    client.AppsV1Api(api).patch_namespaced_deployment_scale(
        "webapp-demo", namespace, {"spec": {"replicas": 1}}
    )
    drifted = runner.invoke(app, ["status", "-n", namespace, *kube])
    assert "drifted: deployment.spec.replicas: want 3, got 1" in drifted.output
    # The row shows the live values, never the desired ones; an image the cluster holds is
    # printed as it is (`[bold]` is no markup, an ESC no escape sequence).
    live_image = "myapp:v2[bold]x\x1b[2J"
    client.AppsV1Api(api).patch_namespaced_deployment(
        "webapp-demo",
        namespace,
        [{"op": "replace", "path": "/spec/template/spec/containers/0/image", "value": live_image}],
    )
    drifted = runner.invoke(app, ["status", "-n", namespace, *kube])
    assert drifted.exit_code == 0, drifted.output
    row = next(line for line in drifted.stdout.splitlines() if line.startswith("helm"))
    assert row.split()[3].endswith("/1"), row  # ready of the live 1 replica
    assert row.split()[4] == "myapp:v2[bold]x\\x1b[2J", row
    assert "\x1b" not in drifted.output

    removed = runner.invoke(app, ["undeploy", "helm", "-n", namespace, *kube])
    assert removed.exit_code == 0, removed.output
    assert f"helm release webapp-demo removed from namespace {namespace}" in removed.output
    assert list_releases(cluster, namespace) == []
    again = runner.invoke(app, ["undeploy", "helm", "-n", namespace, *kube])
    assert again.exit_code == 0
    assert "nothing to remove" in again.output
    empty = runner.invoke(app, ["status", "-n", namespace, *kube])
    assert "helm releases: none" in empty.output


def test_helm_schema_error_from_extra_values_is_one_line(
    cluster: ClusterTarget, namespace: str, tmp_path: Path
) -> None:
    extra = tmp_path / "extra.yaml"
    extra.write_text("securityContext:\n  readOnlyRootFileSystem: true\n")
    result = runner.invoke(
        app,
        [
            "deploy",
            "helm",
            "-n",
            namespace,
            "-f",
            str(extra),
            "--kubeconfig",
            str(cluster.kubeconfig),
        ],
    )
    assert result.exit_code == 2, result.output
    # Refused by `helm template` in the pre-flight, the line names the values file.
    assert _lines(result.output) == [
        f"error: {extra}: securityContext.readOnlyRootFileSystem: unknown key"
    ]
    assert list_releases(cluster, namespace) == []


@pytest.fixture
def webapp_crd(cluster: ClusterTarget) -> None:
    """The WebApp CRD with its validating webhook: the real operator, installed and running
    (a CRD without it would leave the webhook configuration pointing at nobody)."""
    install_operator(cluster)


@pytest.mark.usefixtures("webapp_crd")
def test_status_lists_webapp_resources(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("shop-cr", replicas=2, image="shop:v3")
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, to_cr(webapp, namespace)
    )
    try:
        result = runner.invoke(app, ["status", "-n", namespace, *kube_args(cluster)])
        assert result.exit_code == 0, result.output
        row = next(line for line in result.output.splitlines() if line.startswith("operator"))
        cells = row.split()
        assert cells[:3] == ["operator", "shop-cr", namespace]
        assert cells[3].endswith("/2") and cells[4] == "shop:v3"
        assert "helm releases: none" in result.output
    finally:
        custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, "shop-cr")


@pytest.mark.usefixtures("webapp_crd")
def test_a_webapp_named_by_name_alone_is_shown_not_judged(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    # How `compare status` shows a WebApp whose spec does not validate (the admission webhook
    # keeps such a spec out; one stored before a model change can still be there): its row
    # names it and its live spec, and says why there is nothing to judge it by.
    webapp = make_webapp("shop-named", replicas=2, image="shop:v4")
    custom = client.CustomObjectsApi(api)
    custom.create_namespaced_custom_object(
        API_GROUP, API_VERSION, namespace, PLURAL, to_cr(webapp, namespace)
    )
    try:
        row = get("operator").target_row(cluster, builtin(webapp_named("shop-named")), namespace)
        assert row is not None
        assert (row.approach, row.name, row.namespace) == ("operator", "shop-named", namespace)
        assert (row.desired_replicas, row.ready_replicas, row.image) == (2, None, "shop:v4")
        assert row.state == "invalid spec" and row.detail.startswith("phase ")
        absent = get("operator").target_row(cluster, builtin(webapp_named("other")), namespace)
        assert absent is None
    finally:
        custom.delete_namespaced_custom_object(
            API_GROUP, API_VERSION, namespace, PLURAL, "shop-named"
        )
