"""The argocd approach's deploy layer against the real cluster and the real Argo CD: the same
closed-world judge as the other approaches, heals seen with Argo CD's own record of them, and a
fault Argo CD leaves. Nothing imitates Argo CD."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from kubernetes import client

from compare.approaches import builtin_target, desired_manifest, get
from compare.approaches.argocd.application import THREE_WAY_DIFF, read_application
from compare.approaches.argocd.sync import DIFF_STRATEGIES, last_self_heal, undeploy_argocd
from compare.cluster import ClusterTarget
from compare.errors import CompareError
from compare.judge import with_api_defaults
from compare.webapp import WebApp
from tests.helpers import current_problems, make_webapp

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("argocd_cleanup")]

# Measured: Argo CD's self-heal corrects a drift within about 1 s (3 s after a heal moments
# before: its self-heal backoff). A fault it leaves is looked at for this long.
LEFT_FOR_S = 8.0


def wait_for(check: Callable[[], bool], timeout: float) -> float | None:
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():
            return time.monotonic() - started
        time.sleep(0.1)
    return None


def problems(api: client.ApiClient, namespace: str, webapp: WebApp) -> list[str]:
    desired = with_api_defaults(api, namespace, desired_manifest("argocd", webapp, namespace))
    return current_problems(api, namespace, desired)


def deploy_argocd(
    cluster: ClusterTarget,
    webapp: WebApp,
    namespace: str,
    *,
    diff: str = THREE_WAY_DIFF,
    extra_values: dict[str, object] | None = None,
    timeout: float = 120,
) -> None:
    """The built-in WebApp as its target's argocd arm (the approach's one deploy path)."""
    target = builtin_target(webapp, extra_values=extra_values)
    get("argocd").configured(diff=diff).deploy_target(cluster, target, namespace, timeout=timeout)


def test_deploy_holds_closed_world_and_undeploy_removes_it(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("argod")
    deploy_argocd(cluster, webapp, namespace, timeout=120)
    # The rendered chart plus Argo CD's tracking annotation, closed-world.
    assert problems(api, namespace, webapp) == []
    # The status row: Argo CD's own view, and the judge's.
    (row,) = get("argocd").status(cluster, api, namespace)
    assert (row.approach, row.name, row.namespace) == ("argocd", "argod", namespace)
    assert row.state == "holds" and (row.desired_replicas, row.ready_replicas) == (2, 2)
    assert row.detail.startswith("sync Synced, health Healthy; ")
    assert undeploy_argocd(cluster, namespace, release="argod", timeout=60) is True
    assert get("argocd").status(cluster, api, namespace) == []
    assert read_application(api, namespace, "argod") is None
    assert client.AppsV1Api(api).list_namespaced_deployment(namespace).items == []
    assert client.CoreV1Api(api).list_namespaced_service(namespace).items == []
    assert undeploy_argocd(cluster, namespace, release="argod") is False


@pytest.mark.parametrize("diff", DIFF_STRATEGIES)
def test_image_change_and_deleted_deployment_are_healed_with_argocds_record(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, diff: str
) -> None:
    webapp = make_webapp("heal")
    deploy_argocd(cluster, webapp, namespace, diff=diff, timeout=120)
    apps = client.AppsV1Api(api)
    try:
        # Argo CD may follow its first sync with a selective one of its own: what was newest
        # before the fault.
        before_fault = last_self_heal(api, namespace, "heal")
        apps.patch_namespaced_deployment(
            "heal",
            namespace,
            {"spec": {"template": {"spec": {"containers": [{"name": "webapp", "image": "x:c"}]}}}},
        )

        def image() -> str:
            live = apps.read_namespaced_deployment("heal", namespace)
            return str(live.spec.template.spec.containers[0].image)

        assert wait_for(lambda: image() == "shop:v1", 30) is not None, "image not restored"
        assert wait_for(lambda: last_self_heal(api, namespace, "heal") != before_fault, 10)
        heal = last_self_heal(api, namespace, "heal")
        assert heal is not None and heal.resources == ["Deployment/heal"]
        # Argo CD's Events about it are in the trial's namespace, beside the Application: an
        # automated sync started for the first sync, and again for the heal.
        started = client.CoreV1Api(api).list_namespaced_event(
            namespace,
            field_selector="involvedObject.kind=Application,involvedObject.name=heal,"
            "reason=OperationStarted",
        )
        messages = [e.message for e in started.items for _ in range(e.count or 1)]
        assert len(messages) >= 2, messages
        assert all(m.startswith("Initiated automated sync") for m in messages), messages

        before = apps.read_namespaced_deployment("heal", namespace).metadata.uid
        apps.delete_namespaced_deployment("heal", namespace, propagation_policy="Background")

        def uid() -> str | None:
            found = apps.list_namespaced_deployment(
                namespace, field_selector="metadata.name=heal"
            ).items
            return str(found[0].metadata.uid) if found else None

        # A new object (a new UID) with the desired spec: the deletion healed.
        assert wait_for(lambda: uid() not in (None, before), 30) is not None
        assert wait_for(lambda: problems(api, namespace, webapp) == [], 30) is not None
        again = last_self_heal(api, namespace, "heal")
        assert again is not None and again.resources == ["Deployment/heal"]
        assert again.started_at >= heal.started_at
    finally:
        undeploy_argocd(cluster, namespace, release="heal", timeout=60)


@pytest.mark.parametrize("diff", DIFF_STRATEGIES)
def test_a_foreign_label_is_a_fault_argocd_leaves(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, diff: str
) -> None:
    """A label the chart does not set is no difference to either diff strategy (neither the
    three-way diff nor the server-side dry-run compares fields Argo CD does not manage)."""
    webapp = make_webapp("left")
    deploy_argocd(cluster, webapp, namespace, diff=diff, timeout=120)
    apps = client.AppsV1Api(api)
    try:
        before = last_self_heal(api, namespace, "left")
        apps.patch_namespaced_deployment("left", namespace, {"metadata": {"labels": {"x": "y"}}})

        def labelled() -> bool:
            live = apps.read_namespaced_deployment("left", namespace)
            return (live.metadata.labels or {}).get("x") == "y"

        time.sleep(LEFT_FOR_S)
        assert labelled()
        assert problems(api, namespace, webapp) == ["deployment.metadata.labels.x: added 'y'"]
        app = read_application(api, namespace, "left")
        assert app is not None and app["status"]["sync"]["status"] == "Synced"
        assert last_self_heal(api, namespace, "left") == before  # no sync for it

        # Argo CD was watching all along: a change it does diff is healed, the label stays.
        apps.patch_namespaced_deployment("left", namespace, {"spec": {"replicas": 4}})
        restored = wait_for(
            lambda: apps.read_namespaced_deployment("left", namespace).spec.replicas == 2, 30
        )
        assert restored is not None
        assert labelled()
    finally:
        undeploy_argocd(cluster, namespace, release="left", timeout=60)


def test_values_the_api_server_refuses_are_a_one_line_failure_and_undeploy_still_works(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    # The chart renders them; the API server refuses the Deployment (an invalid annotation
    # key). Argo CD retries its automated sync for minutes; the deploy fails at once.
    with pytest.raises(CompareError) as failed:
        deploy_argocd(
            cluster,
            make_webapp("bad"),
            namespace,
            extra_values={"podAnnotations": {"bad key!": "x"}},
            timeout=60,
        )
    message = failed.value.message
    assert "\n" not in message
    assert message.startswith(f"Application {namespace}/bad failed: sync failed, retrying: ")
    assert "Deployment bad: " in message and "spec.template.annotations" in message
    # Its retrying operation is terminated, so Argo CD deletes it (and the Service it made).
    assert undeploy_argocd(cluster, namespace, release="bad", timeout=60) is True
    assert client.CoreV1Api(api).list_namespaced_service(namespace).items == []
