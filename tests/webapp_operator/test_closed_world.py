"""Closed-world healing by the real operator: whatever someone adds, changes or removes on a
child is reverted (one definition of "desired" with the toolkit's judge), foreign content
inside an owned item is healed in one reconcile (no 422 loop), what the allow-list allows is
left alone, and an object that is not the WebApp's is never taken over.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import OperatorHandle, apply_webapp
from compare.cluster import ClusterTarget
from compare.deploy.charts import install_or_upgrade
from compare.judge import diff_object, with_api_defaults
from compare.webapp import chart_values
from tests.helpers import eventually, make_webapp
from webapp_operator.names import MANAGED_BY_LABEL

from .helpers import (
    Running,
    condition,
    get_deployment,
    get_service,
    get_webapp,
    operator_manifest,
    run_webapp,
    webapp_events,
)

pytestmark = pytest.mark.cluster

CHAOS = "chaos-test"
JSON = "application/json-patch+json"
MERGE = "application/merge-patch+json"
POD = "/spec/template/spec"
CONTAINER = f"{POD}/containers/0"


@pytest.fixture
def running(api: client.ApiClient, namespace: str, operator: OperatorHandle) -> Running:
    return run_webapp(
        api, namespace, make_webapp("shop", replicas=2, env=[{"name": "A", "value": "1"}])
    )


def _patch(run: Running, kind: str, body: Any, content_type: str) -> None:
    if kind == "Deployment":
        client.AppsV1Api(run.api).patch_namespaced_deployment(
            "shop", run.namespace, body, field_manager=CHAOS, _content_type=content_type
        )
    else:
        client.CoreV1Api(run.api).patch_namespaced_service(
            "shop", run.namespace, body, field_manager=CHAOS, _content_type=content_type
        )


def _add(path: str, value: Any) -> list[dict[str, Any]]:
    return [{"op": "add", "path": path, "value": value}]


# (kind, patch, content type, a fragment the DriftCorrected event names)
DRIFT: dict[str, tuple[str, Any, str, str]] = {
    "paused": ("Deployment", {"spec": {"paused": True}}, MERGE, "spec.paused"),
    "strategy": (
        "Deployment",
        {"spec": {"strategy": {"type": "Recreate", "rollingUpdate": None}}},
        MERGE,
        "spec.strategy",
    ),
    "min-ready-seconds": (
        "Deployment",
        {"spec": {"minReadySeconds": 30}},
        MERGE,
        "minReadySeconds",
    ),
    "command": ("Deployment", _add(f"{CONTAINER}/command", ["sh", "-c", "x"]), JSON, "command"),
    "args": ("Deployment", _add(f"{CONTAINER}/args", ["--debug"]), JSON, "args"),
    "startup-probe": (
        "Deployment",
        _add(f"{CONTAINER}/startupProbe", {"tcpSocket": {"port": 8080}}),
        JSON,
        "startupProbe",
    ),
    "lifecycle": (
        "Deployment",
        _add(f"{CONTAINER}/lifecycle", {"preStop": {"sleep": {"seconds": 5}}}),
        JSON,
        "lifecycle",
    ),
    "capability-add": (
        "Deployment",
        _add(f"{CONTAINER}/securityContext/capabilities/add", ["NET_ADMIN"]),
        JSON,
        "capabilities.add",
    ),
    "run-as-root": (
        "Deployment",
        [
            {"op": "replace", "path": f"{POD}/securityContext/runAsUser", "value": 0},
            {"op": "replace", "path": f"{POD}/securityContext/runAsNonRoot", "value": False},
            {"op": "replace", "path": f"{CONTAINER}/securityContext/runAsNonRoot", "value": False},
        ],
        JSON,
        "runAsUser",
    ),
    "host-network": ("Deployment", _add(f"{POD}/hostNetwork", True), JSON, "hostNetwork"),
    "host-pid": ("Deployment", _add(f"{POD}/hostPID", True), JSON, "hostPID"),
    "service-account": (
        "Deployment",
        _add(f"{POD}/serviceAccountName", "default"),
        JSON,
        "serviceAccountName",
    ),
    "node-selector": (
        "Deployment",
        _add(f"{POD}/nodeSelector", {"zone": "a"}),
        JSON,
        "nodeSelector",
    ),
    "tolerations": (
        "Deployment",
        _add(f"{POD}/tolerations", [{"key": "x", "operator": "Exists"}]),
        JSON,
        "tolerations",
    ),
    "affinity": (
        "Deployment",
        _add(
            f"{POD}/affinity",
            {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {"matchExpressions": [{"key": "z", "operator": "Exists"}]}
                        ]
                    }
                }
            },
        ),
        JSON,
        "affinity",
    ),
    "deployment-label": (
        "Deployment",
        {"metadata": {"labels": {"team": "blue"}}},
        MERGE,
        "metadata.labels.team",
    ),
    "external-ips": ("Service", {"spec": {"externalIPs": ["10.9.9.9"]}}, MERGE, "externalIPs"),
    "session-affinity": (
        "Service",
        {"spec": {"sessionAffinity": "ClientIP"}},
        MERGE,
        "sessionAffinity",
    ),
    "service-label": (
        "Service",
        {"metadata": {"labels": {"team": "blue"}}},
        MERGE,
        "metadata.labels.team",
    ),
}

# Foreign content inside an item the operator owns: a merge of the desired item over it would
# be invalid (two probe handlers, two volume sources, value and valueFrom), so only a whole
# replacement heals it — in one reconcile, with no failed attempt.
INSIDE: dict[str, tuple[Any, str]] = {
    "probe-handler": (
        [
            {"op": "remove", "path": f"{CONTAINER}/readinessProbe/httpGet"},
            {"op": "add", "path": f"{CONTAINER}/readinessProbe/tcpSocket", "value": {"port": 8080}},
        ],
        "readinessProbe",
    ),
    "volume-source": (
        [
            {"op": "remove", "path": f"{POD}/volumes/0/emptyDir"},
            {"op": "add", "path": f"{POD}/volumes/0/hostPath", "value": {"path": "/tmp"}},
        ],
        "volumes[tmp]",
    ),
    "env-value-from": (
        [
            {"op": "remove", "path": f"{CONTAINER}/env/0/value"},
            {
                "op": "add",
                "path": f"{CONTAINER}/env/0/valueFrom",
                "value": {"fieldRef": {"fieldPath": "metadata.name"}},
            },
        ],
        "env[A]",
    ),
    "privileged": (
        [
            {
                "op": "replace",
                "path": f"{CONTAINER}/securityContext/allowPrivilegeEscalation",
                "value": True,
            },
            {"op": "add", "path": f"{CONTAINER}/securityContext/privileged", "value": True},
        ],
        "privileged",
    ),
}


def _heal_events(run: Running) -> list[dict[str, Any]]:
    return [
        e
        for e in webapp_events(run.api, run.namespace, "shop")
        if e["reason"] == "DriftCorrected" or e["type"] == "Warning"
    ]


@pytest.mark.parametrize("fault", list(DRIFT), ids=list(DRIFT))
def test_any_drift_of_a_child_is_reverted(running: Running, fault: str) -> None:
    kind, patch, content_type, fragment = DRIFT[fault]
    _patch(running, kind, patch, content_type)
    eventually(running.healed, timeout=20, what=f"{fault} reverted")
    event = eventually(
        lambda: running.event("DriftCorrected", kind, fragment),
        what=f"DriftCorrected naming {fragment}",
    )
    assert event["type"] == "Normal"


@pytest.mark.parametrize("fault", list(INSIDE), ids=list(INSIDE))
def test_foreign_content_inside_an_owned_item_is_healed_in_one_reconcile(
    running: Running, fault: str
) -> None:
    patch, fragment = INSIDE[fault]
    before = len(_heal_events(running))
    _patch(running, "Deployment", patch, JSON)
    eventually(running.healed, timeout=20, what=f"{fault} healed")
    time.sleep(1.0)  # a failing correction would retry within the backoff's first steps
    after = _heal_events(running)[before:]
    assert [e["reason"] for e in after] == ["DriftCorrected"], after
    assert int(after[0].get("count") or 1) == 1 and fragment in after[0]["message"]


def test_what_the_allow_list_allows_is_left_alone(running: Running) -> None:
    """Annotations nobody owns (and `kubectl rollout restart`'s) are not reverted."""
    _patch(running, "Deployment", {"metadata": {"annotations": {"team/owner": "blue"}}}, MERGE)
    restart = {
        "spec": {
            "template": {"metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": "now"}}}
        }
    }
    _patch(running, "Deployment", restart, MERGE)
    _patch(running, "Service", {"metadata": {"annotations": {"team/owner": "blue"}}}, MERGE)
    time.sleep(2.0)
    dep, svc = running.live()
    assert dep is not None and svc is not None
    assert dep["metadata"]["annotations"]["team/owner"] == "blue"
    assert dep["spec"]["template"]["metadata"]["annotations"] == {
        "kubectl.kubernetes.io/restartedAt": "now"
    }
    assert svc["metadata"]["annotations"]["team/owner"] == "blue"
    assert running.event("DriftCorrected") is None
    # A real drift next to them is healed without removing them.
    _patch(running, "Deployment", {"spec": {"replicas": 5}}, MERGE)
    eventually(running.healed, what="replicas healed")
    dep = get_deployment(running.api, running.namespace, "shop")
    assert dep is not None and dep["metadata"]["annotations"]["team/owner"] == "blue"
    assert "kubectl.kubernetes.io/restartedAt" in dep["spec"]["template"]["metadata"]["annotations"]


def test_a_stripped_owner_reference_is_restored(running: Running) -> None:
    _patch(running, "Service", [{"op": "remove", "path": "/metadata/ownerReferences"}], JSON)

    def restored() -> bool:
        svc = get_service(running.api, running.namespace, "shop") or {}
        refs = svc.get("metadata", {}).get("ownerReferences") or []
        return [r.get("uid") for r in refs] == [running.body["metadata"]["uid"]]

    eventually(restored, what="owner reference restored")


def test_a_label_stripped_child_leaves_the_watch_and_is_still_healed(running: Running) -> None:
    """The child watches select the operator's label: an object that loses it leaves the
    watch (a deletion event), and the reconcile it wakes finds and heals it."""
    _patch(
        running,
        "Deployment",
        {"metadata": {"labels": {MANAGED_BY_LABEL: "someone"}}, "spec": {"replicas": 4}},
        MERGE,
    )
    eventually(running.healed, timeout=20, what="label and replicas healed")


def test_an_object_that_is_not_ours_is_never_taken_over(
    api: client.ApiClient, namespace: str, operator: OperatorHandle, cluster: ClusterTarget
) -> None:
    """A Helm release and a WebApp of the same name in one namespace: the release's objects
    stay untouched, the WebApp reports NameConflict, and deleting the WebApp leaves them."""
    webapp = make_webapp("demo", replicas=1)
    install_or_upgrade(cluster, chart_values(webapp), namespace, release="demo")
    dep_before = get_deployment(api, namespace, "demo")
    svc_before = get_service(api, namespace, "demo")
    assert dep_before is not None and svc_before is not None

    apply_webapp(api, make_webapp("demo", replicas=3, image="other:v2"), namespace)

    def conflicted() -> dict[str, Any] | None:
        body = get_webapp(api, namespace, "demo")
        cond = condition(body, "Degraded")
        return body if cond and cond["reason"] == "NameConflict" else None

    body = eventually(conflicted, what="Degraded NameConflict")
    assert body["status"]["phase"] == "Degraded"
    assert "is not this WebApp's" in condition(body, "Degraded")["message"]  # type: ignore[index]
    warnings = eventually(
        lambda: [e for e in webapp_events(api, namespace, "demo") if e["reason"] == "NameConflict"],
        what="NameConflict events",
    )
    assert all(e["type"] == "Warning" for e in warnings)
    time.sleep(1.0)
    dep_after = get_deployment(api, namespace, "demo")
    svc_after = get_service(api, namespace, "demo")
    assert dep_after is not None and svc_after is not None
    for before, after in ((dep_before, dep_after), (svc_before, svc_after)):
        # (Its status moves as its pods come up; nothing else may.)
        assert after["spec"] == before["spec"]
        assert after["metadata"]["labels"] == before["metadata"]["labels"]
        assert not after["metadata"].get("ownerReferences")
        managers = {m.get("manager") for m in after["metadata"].get("managedFields") or []}
        assert "webapp-operator" not in managers, managers

    client.CustomObjectsApi(api).delete_namespaced_custom_object(
        "example.com", "v1", namespace, "webapps", "demo"
    )
    eventually(lambda: get_webapp(api, namespace, "demo") is None, what="WebApp gone")
    time.sleep(2.0)  # the garbage collector has nothing to collect: nothing was ours
    dep_final = get_deployment(api, namespace, "demo")
    assert dep_final is not None and dep_final["metadata"]["uid"] == dep_before["metadata"]["uid"]
    assert get_service(api, namespace, "demo") is not None


def test_judge_and_operator_share_one_definition(running: Running) -> None:
    """What the operator keeps is exactly what the judge checks: after any heal, the judge
    finds nothing on either child, closed-world."""
    desired = with_api_defaults(
        running.api, running.namespace, operator_manifest(running.webapp, running.namespace)
    )
    _patch(running, "Deployment", _add(f"{POD}/hostNetwork", True), JSON)
    eventually(running.healed, what="healed")
    for item in desired.items:
        live = (
            get_deployment(running.api, running.namespace, "shop")
            if item.kind == "Deployment"
            else get_service(running.api, running.namespace, "shop")
        )
        assert diff_object(item.root, item.defaulted, live, raw=item.raw) == []
