"""The Helm deploy API against the real cluster with the real helm binary."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.charts import (
    get_release,
    install_or_upgrade,
    list_releases,
    undeploy_helm,
    webapp_manifest,
)
from compare.errors import CompareError
from compare.judge import with_api_defaults
from compare.webapp import WebApp, load_webapp, to_helm_values
from tests.helpers import current_problems, deploy_webapp, is_ready, make_webapp, pods_of, read_live

pytestmark = pytest.mark.cluster


def mismatches(
    api: client.ApiClient, namespace: str, webapp: WebApp, release: str | None = None
) -> list[str]:
    """What keeps the release's desired state (its rendered objects) from holding."""
    desired = with_api_defaults(api, namespace, webapp_manifest(webapp, release=release))
    return current_problems(api, namespace, desired)


def test_install_brings_pods_ready_with_labels_image_port_env(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = load_webapp()
    deployed = deploy_webapp(cluster, webapp, namespace, timeout=60)
    assert (deployed.release, deployed.namespace, deployed.revision) == (
        "webapp-demo",
        namespace,
        1,
    )
    assert (deployed.chart_version, deployed.app_version, deployed.status) == (
        "0.1.0",
        "v1",
        "deployed",
    )
    assert mismatches(api, namespace, webapp) == []
    pods = pods_of(api, namespace, "webapp-demo")
    assert len(pods) == 3 and all(is_ready(p) for p in pods)
    for pod in pods:
        labels = pod.metadata.labels
        assert labels["app.kubernetes.io/component"] == "web"
        assert labels["app.kubernetes.io/managed-by"] == "Helm"
        assert labels["app.kubernetes.io/version"] == "v1"
        (container,) = pod.spec.containers
        assert (container.name, container.image) == ("webapp", "myapp:v1")
        assert [(p.name, p.container_port) for p in container.ports] == [("http", 8080)]
        assert [(e.name, e.value) for e in container.env] == [("LOG_LEVEL", "info")]
        assert container.security_context.read_only_root_filesystem is True
    service = read_live(api, namespace, "webapp-demo").service
    assert service is not None
    assert service["spec"]["ports"][0]["targetPort"] == "http"
    assert get_release(cluster, namespace, "webapp-demo") == deployed


def test_upgrade_with_a_new_image_rolls_out(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    deploy_webapp(cluster, make_webapp(replicas=2, image="shop:v1"), namespace, timeout=60)
    v2 = make_webapp(replicas=3, image="shop:v2", env=[{"name": "MODE", "value": "new"}])
    upgraded = deploy_webapp(cluster, v2, namespace, timeout=60)
    assert upgraded.revision == 2
    assert mismatches(api, namespace, v2) == []
    # The rollout is complete on return: no pod of the old ReplicaSet runs any more.
    pods = pods_of(api, namespace, "shop")
    assert len(pods) == 3 and all(is_ready(p) for p in pods)
    assert {p.spec.containers[0].image for p in pods} == {"shop:v2"}
    assert {p.metadata.labels["app.kubernetes.io/version"] for p in pods} == {"v2"}
    replica_sets = client.AppsV1Api(api).list_namespaced_replica_set(
        namespace, label_selector="app.kubernetes.io/instance=shop"
    )
    sizes = sorted(rs.spec.replicas for rs in replica_sets.items)
    assert sizes == [0, 3]


def test_scale_to_zero_and_back(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    for replicas in (0, 2, 0):
        webapp = make_webapp(replicas=replicas)
        deploy_webapp(cluster, webapp, namespace, timeout=60)
        assert mismatches(api, namespace, webapp) == []
        assert len(pods_of(api, namespace, "shop")) == replicas


def test_uninstall_removes_every_object_of_the_release(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    deploy_webapp(cluster, make_webapp(), namespace, timeout=60)
    assert len(pods_of(api, namespace, "shop")) == 2
    undeploy_helm(cluster, namespace, release="shop", timeout=60)
    live = read_live(api, namespace, "shop")
    assert (live.deployment, live.service) == (None, None)
    selector = "app.kubernetes.io/instance=shop"
    core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
    assert core.list_namespaced_pod(namespace, label_selector=selector).items == []
    assert apps.list_namespaced_replica_set(namespace, label_selector=selector).items == []
    assert get_release(cluster, namespace, "shop") is None
    assert list_releases(cluster, namespace) == []
    # Removing what is not there is a no-op.
    undeploy_helm(cluster, namespace, release="shop", timeout=10)


@pytest.mark.parametrize(
    ("bad", "expected"),
    [
        ({"replicaCount": -1}, "values: replicaCount: must be >= 0"),
        ({"image": None}, "values: image: required field is missing"),
        ({"port": 70000}, "values: port: must be <= 65535"),
        ({"replica": 2}, "values: replica: unknown key"),
    ],
)
def test_helm_install_rejects_bad_values_and_creates_nothing(
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    bad: dict[str, object],
    expected: str,
) -> None:
    values = {**to_helm_values(make_webapp()), **bad}
    with pytest.raises(CompareError) as err:
        install_or_upgrade(cluster, values, namespace, release="shop")
    assert str(err.value) == expected
    assert err.value.exit_code == 2
    assert list_releases(cluster, namespace) == []
    assert read_live(api, namespace, "shop").deployment is None
    # Helm validates before it creates anything, the namespace included.
    fresh = f"{namespace[:50]}-new"
    with pytest.raises(CompareError):
        install_or_upgrade(cluster, values, fresh, release="shop")
    with pytest.raises(client.ApiException) as missing:
        client.CoreV1Api(api).read_namespace(fresh)
    assert missing.value.status == 404


def test_redeploy_takes_back_drifted_fields(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp(replicas=3)
    deploy_webapp(cluster, webapp, namespace, timeout=60)
    apps = client.AppsV1Api(api)
    apps.patch_namespaced_deployment_scale("shop", namespace, {"spec": {"replicas": 1}})
    client.CoreV1Api(api).delete_namespaced_service("shop", namespace)
    drift = mismatches(api, namespace, webapp)
    assert "deployment.spec.replicas: want 3, got 1" in drift and "service: missing" in drift
    # Helm 4 applies server-side; without --force-conflicts this upgrade would fail.
    again = deploy_webapp(cluster, webapp, namespace, timeout=60)
    assert again.revision == 2
    assert mismatches(api, namespace, webapp) == []


def test_release_name_other_than_the_webapp(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp()
    deployed = deploy_webapp(cluster, webapp, namespace, release="shop-helm", timeout=60)
    assert deployed.release == "shop-helm"
    live = read_live(api, namespace, "shop")  # objects are named after the WebApp
    assert live.deployment is not None
    selector = live.deployment["spec"]["selector"]["matchLabels"]
    assert selector["app.kubernetes.io/instance"] == "shop-helm"
    assert mismatches(api, namespace, webapp, release="shop-helm") == []
    undeploy_helm(cluster, namespace, release="shop-helm", timeout=60)
    assert read_live(api, namespace, "shop").deployment is None


def test_concurrent_deploys_from_threads(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    apps = [make_webapp(f"shop-{i}", image=f"shop:v{i}") for i in range(3)]
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda w: deploy_webapp(cluster, w, namespace, timeout=90), apps))
    assert [r.release for r in results] == ["shop-0", "shop-1", "shop-2"]
    for webapp in apps:
        assert mismatches(api, namespace, webapp) == []
    assert [r.release for r in list_releases(cluster, namespace)] == ["shop-0", "shop-1", "shop-2"]


def test_timeout_is_one_line_naming_what_is_missing(cluster: ClusterTarget, namespace: str) -> None:
    # No node carries this label: the pods stay Pending and the Deployment never Available.
    unschedulable = {"nodeSelector": {"compare.test/none": "x"}}
    started = time.monotonic()
    with pytest.raises(CompareError) as err:
        deploy_webapp(cluster, make_webapp(), namespace, timeout=3, extra_values=unschedulable)
    assert time.monotonic() - started < 15
    message = str(err.value)
    assert message.startswith(
        f"helm release shop {namespace}/shop did not reach its desired state within 3s"
    )
    assert "pods.ready: want 2, got 0" in message and "\n" not in message
    assert err.value.exit_code == 1


def test_extra_values_cannot_override_the_webapp(cluster: ClusterTarget, namespace: str) -> None:
    with pytest.raises(CompareError, match=r"^values: image is set from the WebApp manifest"):
        deploy_webapp(cluster, make_webapp(), namespace, extra_values={"image": "other:v1"})
    assert list_releases(cluster, namespace) == []
