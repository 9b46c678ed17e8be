"""`--target FILE`, Argo CD arm: a target's own chart as an Application the real Argo CD
application controller syncs and self-heals (`compare.approaches.argocd.arm`).

The chart is tests/fixtures/charts/stateful-app (a StatefulSet, a headless Service, a mounted
ConfigMap, a Secret, a ServiceAccount with a Role and RoleBinding): nothing like the WebApp.
Without a cluster: a target without an `argocd` key asked for with `-a argocd`, and an OCI chart
the arm cannot deploy, are one line each (exit 2) before anything is touched. Against the real
controllers: `compare deploy argocd --target` publishes the chart in the toolkit's own chart
repository and holds closed-world, `compare status --target` judges it, `compare undeploy`
removes everything it deployed; a chart from a repository (one on loopback) is named in the
Application as it is; `compare run --target -a argocd` heals a changed image, a changed
ConfigMap value and a changed Secret value (Argo CD's self-heal) and leaves an added env var
(its three-way diff does not see it).
"""

from __future__ import annotations

import contextlib
import ipaddress
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import desired_manifest, load_target
from compare.approaches.argocd.application import instance_name, read_application
from compare.approaches.argocd.controllers import ARGOCD, start_argocd
from compare.approaches.argocd.sync import TRACKING_ID, chart_applied
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.cluster.embedded import LB_RANGE
from compare.deploy.chart_server import publish_chart
from compare.deploy.chart_target import render_target
from compare.kube import delete_namespace
from compare.paths import EXAMPLES_DIR
from compare.results import latest_run, load_results
from compare.webapp import load_webapp
from tests.helpers import load_balancer_address

runner = CliRunner()
NO_CLUSTER = ["--kubeconfig", "/nonexistent/kubeconfig"]
CHART = Path(__file__).parents[2] / "fixtures" / "charts" / "stateful-app"
PLAIN = Path(__file__).parents[2] / "fixtures" / "charts" / "plain-app"
HEAD = {"apiVersion": "compare.example.com/v1alpha1", "kind": "Target", "name": "sapp"}


def _target(folder: Path, **arms: Any) -> Path:
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump({**HEAD, **arms}))
    return path


def _argocd(folder: Path) -> Path:
    arm = {"chart": {"path": str(CHART)}, "release": "sapp", "values": {"replicas": 2}}
    return _target(folder, argocd=arm)


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return str(lines[0]).removeprefix("error: ")


def test_asking_for_argocd_of_a_target_without_the_key_is_one_line(tmp_path: Path) -> None:
    path = _target(tmp_path, helm={"chart": {"path": str(CHART)}})
    expected = f"{path}: argocd: not given (this target has no argocd key)"
    run = ["run", "--target", str(path), "-a", "argocd", "-e", "image-change", *NO_CLUSTER]
    assert _one_error_line(runner.invoke(app, run)) == expected
    deploy = ["deploy", "argocd", "--target", str(path), *NO_CLUSTER]
    assert _one_error_line(runner.invoke(app, deploy)) == expected


def test_an_oci_chart_is_one_line_naming_the_field(tmp_path: Path) -> None:
    path = _target(tmp_path, argocd={"chart": {"oci": "oci://127.0.0.1:1/charts/app"}})
    result = runner.invoke(app, ["deploy", "argocd", "--target", str(path), *NO_CLUSTER])
    assert _one_error_line(result) == (
        f"{path}: argocd.chart.oci: an OCI chart is not supported by the argocd arm yet"
        " (give chart.path or chart.repo)"
    )


def test_target_and_app_are_mutually_exclusive(tmp_path: Path) -> None:
    path = _argocd(tmp_path)
    args = ["deploy", "argocd", "--target", str(path), "--app", "x.yaml", *NO_CLUSTER]
    assert _one_error_line(runner.invoke(app, args)).startswith(
        "--target and --app are mutually exclusive"
    )


@pytest.mark.cluster
@pytest.mark.usefixtures("argocd_cleanup")
def test_deploy_status_and_undeploy_of_a_target_chart(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    path, namespace = _argocd(tmp_path), "argo-target"
    where = ["--target", str(path), "-n", namespace, "--kubeconfig", str(cluster.kubeconfig)]
    deployed = runner.invoke(app, ["deploy", "argocd", *where])
    assert deployed.exit_code == 0, deployed.output
    assert "argocd Application sapp (chart " in deployed.output
    assert "Synced, Healthy, desired state holds" in deployed.output
    api = cluster.api_client()
    try:
        application = read_application(api, namespace, "sapp")
        assert application is not None
        source = application["spec"]["source"]
        # The local chart, published in the toolkit's own repository, with the target's values.
        assert "/targets/" in source["repoURL"] and source["chart"] == "stateful-app"
        assert source["helm"] == {"releaseName": "sapp", "valuesObject": {"replicas": 2}}
        statefulset = client.AppsV1Api(api).read_namespaced_stateful_set(
            "sapp-stateful-app", namespace
        )
        assert statefulset.metadata.annotations[TRACKING_ID] == (
            f"{instance_name(namespace, 'sapp')}:apps/StatefulSet:{namespace}/sapp-stateful-app"
        )
        status = runner.invoke(app, ["status", *where])
        assert status.exit_code == 0, status.output
        lines = status.output.splitlines()
        (row,) = [line for line in lines if line.split()[:2] == ["argocd", "sapp"]]
        assert "sapp" in row and "2/2" in row and row.rstrip().endswith("holds"), row
        removed = runner.invoke(app, ["undeploy", "argocd", *where])
        assert removed.exit_code == 0, removed.output
        assert read_application(api, namespace, "sapp") is None
        # Every object the Application deployed is gone, the Role and RoleBinding included.
        core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
        assert not client.AppsV1Api(api).list_namespaced_stateful_set(namespace).items
        assert not [
            c for c in core.list_namespaced_config_map(namespace).items if "sapp" in c.metadata.name
        ]
        assert not rbac.list_namespaced_role_binding(namespace).items
        again = runner.invoke(app, ["undeploy", "argocd", *where])
        assert again.exit_code == 0 and "nothing to remove" in again.output
    finally:
        api.close()


@pytest.mark.cluster
@pytest.mark.usefixtures("argocd_cleanup")
def test_a_run_heals_a_changed_image_and_leaves_an_added_env_var(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    path, out = _argocd(tmp_path), tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(path), "-a", "argocd"),
            # Twice the slowest heal below (12 s): env-add, which nobody heals, waits it out.
            *("-e", "image-change", "-e", "env-add", "--heal-window", "24"),
            # The chart's ConfigMap and Secret: faults for every approach that deploys them.
            *("-e", "configmap-data-change", "-e", "secret-data-change"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    results = load_results(latest_run(out))
    assert results.complete and results.settings.approaches == ["argocd"]
    trials = {t.experiment: t for t in results.trials}
    healed, left = trials["image-change"], trials["env-add"]
    assert healed.status == "healed", (healed.error, healed.evidence.mismatches_at_end)
    assert healed.evidence.fault_seen is not None
    assert healed.evidence.detected_by == "Event OperationStarted (seen at arrival)"
    assert healed.time_to_detect_seconds is not None and healed.time_to_heal_seconds is not None
    # 0 when the Event arrived before the injecting call returned (the controller was quicker).
    assert 0 <= healed.time_to_detect_seconds <= healed.time_to_heal_seconds
    assert left.status == "not-healed", left.error
    assert any("env" in m for m in left.evidence.mismatches_at_end), left.evidence.mismatches_at_end
    # A changed ConfigMap or Secret value is a diff its self-heal syncs back (measured 8.5-12 s).
    for name in ("configmap-data-change", "secret-data-change"):
        data = trials[name]
        assert data.status == "healed", (name, data.error, data.evidence.mismatches_at_end)
        assert data.evidence.fault_seen is not None and data.evidence.healed_by, name


def test_the_built_in_webapp_is_the_argocd_arm_of_its_target_file() -> None:
    # One rule for what an Application applies: the built-in chart with the WebApp's values,
    # given as a target file's argocd arm, desires exactly what the built-in path does.
    target = load_target(EXAMPLES_DIR / "target-webapp.yaml")
    namespace = "ns1"
    rendered = render_target(target, target.chart_arm("argocd"), namespace)
    from_target = chart_applied(rendered, namespace, target.chart_arm("argocd").release)
    assert from_target == desired_manifest("argocd", load_webapp(), namespace)


@pytest.mark.cluster
@pytest.mark.usefixtures("argocd_cleanup")
def test_a_repository_chart_is_named_as_it_is(cluster: ClusterTarget, tmp_path: Path) -> None:
    # A chart repository on loopback: the chart published by the toolkit's own chart server.
    handle = start_argocd(cluster)
    assert handle.repository_url is not None
    url = publish_chart(ARGOCD.state_dir(cluster) / "repo", handle.repository_url, CHART)
    chart = {"repo": url, "name": "stateful-app", "version": "0.1.0"}
    path = _target(tmp_path, argocd={"chart": chart, "release": "srepo"})
    namespace = "argo-target-repo"
    where = ["--target", str(path), "-n", namespace, "--kubeconfig", str(cluster.kubeconfig)]
    deployed = runner.invoke(app, ["deploy", "argocd", *where])
    assert deployed.exit_code == 0, deployed.output
    assert f"chart stateful-app 0.1.0 from {url}" in deployed.output
    api = cluster.api_client()
    try:
        application = read_application(api, namespace, "srepo")
        assert application is not None
        source = application["spec"]["source"]
        assert (source["repoURL"], source["chart"], source["targetRevision"]) == (
            url,
            "stateful-app",
            "0.1.0",
        )
    finally:
        api.close()
    removed = runner.invoke(app, ["undeploy", "argocd", *where])
    assert removed.exit_code == 0, removed.output


@pytest.mark.cluster
@pytest.mark.usefixtures("argocd_cleanup")
def test_a_load_balancer_service_is_healthy_with_the_embedded_clusters_address(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    # Argo CD's health of a LoadBalancer Service is Healthy once it has an ingress address:
    # on the embedded cluster its address controller gives one (on another, its own LB).
    values = {"serviceType": "LoadBalancer", "replicaCount": 1}
    path = _target(
        tmp_path, argocd={"chart": {"path": str(PLAIN)}, "release": "lb", "values": values}
    )
    namespace = "argo-target-lb"
    where = ["--target", str(path), "-n", namespace, "--kubeconfig", str(cluster.kubeconfig)]
    deployed = runner.invoke(app, ["deploy", "argocd", *where])
    try:
        assert deployed.exit_code == 0, deployed.output
        assert "Synced, Healthy, desired state holds" in deployed.output
        if cluster.embedded:
            api = cluster.api_client()
            try:
                address = load_balancer_address(api, namespace, "lb")
            finally:
                api.close()
            assert ipaddress.ip_address(address) in ipaddress.ip_network(LB_RANGE)
    finally:
        removed = runner.invoke(app, ["undeploy", "argocd", *where])
        assert removed.exit_code == 0, removed.output


@pytest.mark.cluster
@pytest.mark.usefixtures("argocd_cleanup")
def test_undeploy_leaves_what_argocd_keeps_without_waiting_for_it(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    # A CRD in crds/ and a ConfigMap Helm is told to keep: Argo CD deletes neither with its
    # Application; the undeploy does not wait for them, exits 0 and says so once.
    chart = Path(__file__).parents[2] / "fixtures" / "charts" / "parts-app"
    path = _target(tmp_path, argocd={"chart": {"path": str(chart)}, "release": "kept"})
    namespace, crd = "argo-kept", "gadgets.parts.example.com"
    where = ["--target", str(path), "-n", namespace, "--kubeconfig", str(cluster.kubeconfig)]
    api = cluster.api_client()
    try:
        deployed = runner.invoke(app, ["deploy", "argocd", *where])
        assert deployed.exit_code == 0, deployed.output
        started = time.monotonic()
        removed = runner.invoke(app, ["undeploy", "argocd", *where])
        took = time.monotonic() - started
        assert removed.exit_code == 0, removed.output
        assert took < 60, took  # the old wait for the CRD alone was the full 120 s timeout
        (said,) = [line for line in removed.output.splitlines() if "left as Argo CD" in line]
        assert f"CustomResourceDefinition {crd} (Argo CD never deletes a CRD" in said
        assert f"ConfigMap {namespace}/kept-state (helm.sh/resource-policy: keep)" in said
        assert read_application(api, namespace, "kept") is None
        assert not client.AppsV1Api(api).list_namespaced_stateful_set(namespace).items
        extensions = client.ApiextensionsV1Api(api)
        assert extensions.read_custom_resource_definition(crd).metadata.name == crd
    finally:
        with contextlib.suppress(client.ApiException):
            client.ApiextensionsV1Api(api).delete_custom_resource_definition(crd)
        delete_namespace(api, namespace)
        api.close()
