"""Charts written without this toolkit in mind, through the helm and flux arms, on the real cluster.

tests/fixtures/charts/wild-app has the shapes real charts have (an unlabelled ConfigMap, hooks
and a `helm test` pod, a CRD in crds/ and a custom resource of it, a library chart and a
subchart, a random password kept with `lookup`, `helm.sh/resource-policy: keep`, release-named
cluster-scoped RBAC, an HPA that owns the Deployment's replicas, a PDB, a NetworkPolicy, an
Ingress, a Job whose finished pods carry the app's labels, a CronJob);
tests/fixtures/charts/host-daemon is a node agent (a DaemonSet on the host network with a host
port, RBAC with fixed names). Each deploys and holds; what each deployer writes on every object
is exactly what `compare.deploy.ownership` says;
a foreign label is still drift; a DaemonSet wants one pod per node it may run on.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import load_target
from compare.approaches.flux.arm import deploy_target_flux, undeploy_target_flux
from compare.approaches.flux.controllers import FLUX
from compare.cli import app
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.deploy.chart_target import deploy_target, render_target, uninstall_target
from compare.deploy.charts import release_objects
from compare.deploy.ownership import flux_writes, helm_writes
from compare.judge import judged_objects, problems, read
from compare.judge.kinds import qualified, resolve
from compare.judge.rest import request
from compare.results import latest_run, load_results
from compare.run.preflight import chart_sharing
from compare.target import Target
from tests.helpers import assert_stopped_in_preflight, eventually

runner = CliRunner()
CHARTS = Path(__file__).parents[1] / "fixtures" / "charts"
WILD, DAEMON = CHARTS / "wild-app", CHARTS / "host-daemon"
WIDGETS = "widgets.wild.example.com"  # wild-app's crds/


def _target(folder: Path, chart: Path, *, values: dict[str, Any] | None = None) -> Path:
    arm = {"chart": {"path": str(chart)}, "release": chart.name[:8], "values": values or {}}
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": chart.name,
        "helm": arm,
        "flux": arm,
    }
    path = folder / f"{chart.name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _live(api: client.ApiClient, namespace: str, obj: dict[str, Any]) -> dict[str, Any]:
    meta = obj["metadata"]
    row = resolve(api, qualified(obj["kind"], obj["apiVersion"]))
    if row.served:  # a custom resource (the chart's Widget): by path
        return request(api, "GET", row.path(namespace, meta["name"]), timeout=10.0)
    got = row.read_call(api)(meta["name"], meta.get("namespace") or namespace)
    return dict(api.sanitize_for_serialization(got))


def _check_written(
    api: client.ApiClient, namespace: str, manifest: list[dict[str, Any]], writes: Any
) -> None:
    """Every object carries the chart's labels and exactly the deployer's on top; the
    deployer's annotations are there."""
    assert manifest
    for obj in judged_objects(manifest):
        live = _live(api, namespace, obj)["metadata"]
        chart_labels = obj["metadata"].get("labels") or {}
        assert (live.get("labels") or {}) == {**chart_labels, **writes.labels}, obj["kind"]
        annotations = live.get("annotations") or {}
        for key, value in writes.annotations.items():
            assert annotations.get(key) == value, (obj["kind"], key)


@pytest.mark.cluster
def test_helm_writes_exactly_its_ownership_metadata_and_nothing_else_is_allowed(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target = load_target(_target(tmp_path, WILD))
    helm = target.chart_arm("helm")
    _, desired = deploy_target(cluster, target, helm, namespace, timeout=90)
    try:
        manifest = release_objects(cluster, namespace, helm.release)
        assert manifest is not None
        _check_written(api, namespace, manifest, helm_writes(helm.release, namespace))
        # The state holds: the HPA set replicas 2 on a Deployment that leaves them out, the
        # Job completed and its finished pods (with the app's labels) are nobody's running pods.
        kinds = {item.kind for item in desired.items}
        assert {"HorizontalPodAutoscaler", "Job", "CronJob", "Ingress"} <= kinds
        assert {"NetworkPolicy", "PodDisruptionBudget", "ClusterRole", "StatefulSet"} <= kinds
        assert "Widget" in kinds  # a custom resource of the chart's own CRD (crds/)
        assert "Pod" not in kinds  # the `helm test` pod is a hook, not desired state
        reading = read(api, namespace, desired.kinds)
        assert problems(desired, reading) == []
        deployment = desired.first("Deployment")
        assert deployment is not None
        live = reading.get("Deployment", deployment.name)
        assert live is not None and live["spec"]["replicas"] == 2

        # Removing Helm's own label is drift, and so is a foreign label, on an object whose
        # template sets no labels at all.
        config = next(i for i in desired.of_kind("ConfigMap") if i.name.endswith("-settings"))
        core = client.CoreV1Api(api)
        core.patch_namespaced_config_map(
            config.name, namespace, {"metadata": {"labels": {"team": "someone-else"}}}
        )
        found = problems(desired, read(api, namespace, desired.kinds))
        assert f"{config.root}.metadata.labels.team: added 'someone-else'" in found, found
        core.patch_namespaced_config_map(
            config.name,
            namespace,
            {"metadata": {"labels": {"team": None, "app.kubernetes.io/managed-by": None}}},
        )
        found = problems(desired, read(api, namespace, desired.kinds))
        assert any("app.kubernetes.io/managed-by" in p and "removed" in p for p in found), found
        # The RoleBinding the chart renders into kube-system is judged there.
        elsewhere = [i for i in desired.items if i.namespace == "kube-system"]
        assert [i.kind for i in elsewhere] == ["RoleBinding"]
        rbac = client.RbacAuthorizationV1Api(api)
        rbac.delete_namespaced_role_binding(elsewhere[0].name, "kube-system")
        found = problems(desired, read(api, namespace, desired.kinds))
        assert f"rolebinding/kube-system/{elsewhere[0].name}: missing" in found, found
        # An HPA's replicas outside its range are drift.
        apps = client.AppsV1Api(api)
        apps.patch_namespaced_deployment(deployment.name, namespace, {"spec": {"replicas": 9}})
        found = problems(desired, read(api, namespace, desired.kinds))
        assert f"{deployment.root}.spec.replicas: want '2..4', got 9" in found, found
    finally:
        uninstall_target(cluster, helm, namespace)


@pytest.mark.cluster
def test_helm_controller_writes_helms_metadata_and_its_origin_labels(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target = load_target(_target(tmp_path, WILD))
    flux = target.chart_arm("flux")
    desired = deploy_target_flux(cluster, target, flux, namespace, timeout=120)
    try:
        manifest = release_objects(cluster, namespace, flux.release)
        assert manifest is not None
        # The stored manifest has the origin labels already (a post-render step of its own).
        writes = flux_writes(flux.release, namespace)
        _check_written(api, namespace, manifest, writes)
        assert problems(desired, read(api, namespace, desired.kinds)) == []
    finally:
        undeploy_target_flux(cluster, flux, namespace)


def _nodes(api: client.ApiClient) -> list[str]:
    return sorted(n.metadata.name for n in client.CoreV1Api(api).list_node().items)


@pytest.mark.cluster
def test_a_daemonset_wants_one_pod_per_node_it_may_run_on(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    nodes = _nodes(api)
    assert len(nodes) >= 2
    # Only the first node: the DaemonSet wants one pod, and the proof agrees.
    selector = {"kubernetes.io/hostname": nodes[0]}
    target = load_target(_target(tmp_path, DAEMON, values={"nodeSelector": selector}))
    _, desired = deploy_target(cluster, target, target.chart_arm("helm"), namespace, timeout=60)
    try:
        reading = read(api, namespace, desired.kinds)
        assert "Node" in desired.kinds and len(reading.all("Node")) == len(nodes)
        daemon = desired.first("DaemonSet")
        assert daemon is not None
        live = reading.get("DaemonSet", daemon.name)
        assert live is not None and live["kind"] == "DaemonSet"
        assert live["status"]["desiredNumberScheduled"] == 1
        assert problems(desired, reading) == []
    finally:
        uninstall_target(cluster, target.chart_arm("helm"), namespace)


def _every_node_target(folder: Path) -> Target:
    return load_target(_target(folder, DAEMON))


def test_a_node_agent_cannot_share_the_cluster_and_a_namespaced_app_can(tmp_path: Path) -> None:
    # Rendering is all it takes: no cluster.
    reasons = chart_sharing(_every_node_target(tmp_path), ["helm", "flux"])
    claims = [r for r in reasons if r.startswith("DaemonSet host-dae-agent: ")]
    assert len(claims) == 2, reasons  # named after the target's release, host-dae
    assert {r.split(": ", 1)[1] for r in claims} == {
        "its pods use the host network",
        "host port 9109",
    }
    assert "ClusterRole host-daemon-reader: a fixed name" in reasons
    assert "ClusterRoleBinding host-daemon-reader: a fixed name" in reasons
    wild = load_target(_target(tmp_path, WILD))
    assert chart_sharing(wild, ["helm", "flux"]) == []
    assert render_target(wild, wild.chart_arm("helm"), "ns")


@pytest.mark.cluster
def test_a_node_agent_runs_its_trials_one_at_a_time_on_two_clusters_without_errors(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(_target(tmp_path, DAEMON)), "-a", "helm", "-a", "flux"),
            *("-e", "pod-delete-one", "-e", "image-change", "--heal-window", "10"),
            *("--clusters", "2", "--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "trials run one at a time on each cluster" in result.output
    assert "host port 9109" in result.output and "a fixed name" in result.output
    assert "preflight: the helm arm reached its desired state" in result.output
    assert "trials ran on 2 cluster(s)" in result.output
    results = load_results(latest_run(out))
    assert results.settings.parallel == 1
    # One sibling made for the run (Flux's controllers started on it too), used, and gone.
    sibling = f"{cluster_key(cluster)}-{results.run_id.lower()}-2"
    assert results.clusters_used == 2
    assert {t.cluster for t in results.trials} == {None, sibling}, result.output
    assert not EmbeddedCluster(sibling).status().exists
    assert not FLUX.state_dir(ClusterTarget(EmbeddedCluster(sibling).kubeconfig, None)).exists()
    verdicts = {(t.experiment, t.approach): t.status for t in results.trials}
    assert verdicts == {
        ("pod-delete-one", "helm"): "healed",
        ("pod-delete-one", "flux"): "healed",
        ("image-change", "helm"): "not-healed",
        # helm-controller reverts a changed value of a field the chart sets.
        ("image-change", "flux"): "healed",
    }, [(t.experiment, t.approach, t.error) for t in results.trials]


@pytest.mark.cluster
def test_a_wild_chart_runs_the_catalogue_without_a_toolkit_error(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    # The chart's crds/ CRD is not on the cluster before the run (an earlier test's install
    # left it, as Helm does): the run installs it, and removes it at its end.
    extensions = client.ApiextensionsV1Api(api)
    with contextlib.suppress(client.ApiException):
        extensions.delete_custom_resource_definition(WIDGETS)
    eventually(lambda: WIDGETS not in _crds(extensions))
    out = tmp_path / "reports"
    chosen = ("pod-delete-one", "image-change", "configmap-data-change", "service-delete")
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(_target(tmp_path, WILD)), "-a", "helm", "-a", "flux"),
            *(arg for name in chosen for arg in ("-e", name)),
            *("--heal-window", "15", "--kubeconfig", str(cluster.kubeconfig)),
            *("--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "one at a time" not in result.output
    results = load_results(latest_run(out))
    errors = [(t.experiment, t.approach, t.error) for t in results.trials if t.status == "error"]
    assert errors == []
    verdicts = {(t.experiment, t.approach): t.status for t in results.trials}
    assert verdicts[("pod-delete-one", "helm")] == "healed"
    assert verdicts[("configmap-data-change", "helm")] == "not-healed"
    assert verdicts[("service-delete", "helm")] == "not-healed"
    assert verdicts[("service-delete", "flux")] == "healed"
    # Deleted at the run's end (a CRD goes once its finalizer has run).
    eventually(lambda: WIDGETS not in _crds(extensions), what="the chart's CRD removed")


def _crds(extensions: client.ApiextensionsV1Api) -> set[str]:
    return {crd.metadata.name for crd in extensions.list_custom_resource_definition().items}


@pytest.mark.cluster
def test_a_chart_that_cannot_hold_stops_the_run_after_one_deploy(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    # No node has room for the web pods: they are never Ready, no trial could ever start.
    # The deploy timeout is all the preflight waits before it gives up: a short one suffices.
    unreachable = {"resources": {"requests": {"cpu": "100000"}}}
    chart = _target(tmp_path, WILD, values=unreachable)
    out = tmp_path / "reports"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(chart), "-a", "helm", "-a", "flux"),
            *("-e", "pod-delete-one"),
            *("--deploy-timeout", "25", "--kubeconfig", str(cluster.kubeconfig)),
            *("--output", str(out)),
        ],
    )
    assert result.exit_code != 0, result.output
    line = result.stderr.strip().splitlines()[-1]
    assert "preflight of the helm arm" in line and "no trial can hold this state" in line, line
    assert "pods.ready: want 2, got 0" in line, line
    # No trial started: the run's results say why.
    assert_stopped_in_preflight(out, line.removeprefix("error: "))
