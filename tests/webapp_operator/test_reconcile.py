"""The real operator process against the real (embedded) cluster: create, status, events,
drift healing of every owned field, foreign additions, spec changes and deletion.

Evidence is always the objects' own fields (a recreated object has a new UID), never pod
counts; every wait polls with a deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import OperatorHandle, apply_webapp
from compare.approaches.operator.process import OperatorOptions
from compare.judge import mismatches, read, with_api_defaults
from tests.helpers import eventually, make_webapp, raw
from webapp_operator.names import ANNOTATION_PREFIX, OPERATOR_NAMESPACE, REGISTRY_CONFIGMAP

from .helpers import (
    Running,
    condition,
    get_deployment,
    get_webapp,
    operator_manifest,
    run_webapp,
    webapp_events,
)

pytestmark = pytest.mark.cluster

CHAOS = "chaos-test"  # the field manager of every injected fault


@pytest.fixture
def running(api: client.ApiClient, namespace: str, operator: OperatorHandle) -> Running:
    return run_webapp(
        api, namespace, make_webapp("shop", replicas=3, env=[{"name": "A", "value": "1"}])
    )


# -- create --------------------------------------------------------------------------------


def test_create_builds_owned_children_and_reports_status(running: Running) -> None:
    uid = running.body["metadata"]["uid"]
    for child in (running.deployment, running.service):
        (ref,) = child["metadata"]["ownerReferences"]
        assert ref == {
            "apiVersion": "example.com/v1",
            "kind": "WebApp",
            "name": "shop",
            "uid": uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    desired = with_api_defaults(
        running.api, running.namespace, operator_manifest(running.webapp, running.namespace)
    )
    assert mismatches(desired, read(running.api, running.namespace)) == []

    status = running.body["status"]
    assert status["readyReplicas"] == 3 and status["replicas"] == 3
    assert status["selector"] == "app.kubernetes.io/instance=shop,app.kubernetes.io/name=webapp"
    assert condition(running.body, "Available")["status"] == "True"  # type: ignore[index]
    assert condition(running.body, "Progressing")["reason"] == "RolloutComplete"  # type: ignore[index]
    assert condition(running.body, "Degraded")["status"] == "False"  # type: ignore[index]
    assert "example.com/cleanup" in running.body["metadata"]["finalizers"]

    created = [
        e for e in webapp_events(running.api, running.namespace, "shop") if e["reason"] == "Created"
    ]
    # One Event for the reconcile that created both children.
    assert [e["message"] for e in created] == [
        f"created Deployment {running.namespace}/shop; created Service {running.namespace}/shop"
    ]
    assert all(e["type"] == "Normal" and e["eventTime"] for e in created)

    def registered() -> bool:
        registry = raw(
            client.CoreV1Api(running.api).read_namespaced_config_map,
            REGISTRY_CONFIGMAP,
            OPERATOR_NAMESPACE,
        )
        return (registry or {}).get("data", {}).get(f"{running.namespace}.shop") == uid

    # The registry's writer gathers entries for a second before it writes them.
    eventually(registered, timeout=10, what="registry entry")


# -- drift ---------------------------------------------------------------------------------


def _patch_deployment(run: Running, body: Any, content_type: str) -> None:
    client.AppsV1Api(run.api).patch_namespaced_deployment(
        run.webapp.name, run.namespace, body, field_manager=CHAOS, _content_type=content_type
    )


def _patch_service(run: Running, body: Any, content_type: str) -> None:
    client.CoreV1Api(run.api).patch_namespaced_service(
        run.webapp.name, run.namespace, body, field_manager=CHAOS, _content_type=content_type
    )


JSON = "application/json-patch+json"
MERGE = "application/strategic-merge-patch+json"
CONTAINER = "/spec/template/spec/containers/0"


@dataclass(frozen=True)
class Fault:
    inject: Callable[[Running], None]
    event: tuple[str, ...]  # fragments the DriftCorrected event must name


FAULTS = {
    "replicas": Fault(
        lambda r: _patch_deployment(r, {"spec": {"replicas": 1}}, MERGE), ("spec.replicas",)
    ),
    "image": Fault(
        lambda r: _patch_deployment(
            r, [{"op": "replace", "path": f"{CONTAINER}/image", "value": "evil:v9"}], JSON
        ),
        ("containers[webapp].image",),
    ),
    "env-value": Fault(
        lambda r: _patch_deployment(
            r, [{"op": "replace", "path": f"{CONTAINER}/env/0/value", "value": "changed"}], JSON
        ),
        ("env[A].value",),
    ),
    "env-removed": Fault(
        lambda r: _patch_deployment(r, [{"op": "remove", "path": f"{CONTAINER}/env"}], JSON),
        ("containers[webapp].env",),
    ),
    "container-port": Fault(
        lambda r: _patch_deployment(
            r,
            [{"op": "replace", "path": f"{CONTAINER}/ports/0/containerPort", "value": 9999}],
            JSON,
        ),
        ("ports[http].containerPort",),
    ),
    "template-label": Fault(
        lambda r: _patch_deployment(
            r,
            {"spec": {"template": {"metadata": {"labels": {"app.kubernetes.io/component": "x"}}}}},
            MERGE,
        ),
        ("template.metadata.labels[app.kubernetes.io/component]",),
    ),
    "service-port": Fault(
        lambda r: _patch_service(
            r, [{"op": "replace", "path": "/spec/ports/0/port", "value": 9090}], JSON
        ),
        ("service.spec.ports[http].port",),
    ),
    "service-selector": Fault(
        lambda r: _patch_service(
            r,
            [
                {
                    "op": "replace",
                    "path": "/spec/selector",
                    "value": {"app.kubernetes.io/name": "other"},
                }
            ],
            JSON,
        ),
        ("spec.selector[app.kubernetes.io/name]",),
    ),
    "service-type": Fault(
        lambda r: _patch_service(r, {"spec": {"type": "NodePort"}}, MERGE), ("spec.type",)
    ),
}


@pytest.mark.parametrize("fault", list(FAULTS), ids=list(FAULTS))
def test_drift_of_an_owned_field_is_reverted(running: Running, fault: str) -> None:
    case = FAULTS[fault]
    case.inject(running)
    eventually(running.healed, timeout=20, what=f"{fault} healed")
    event = eventually(
        lambda: running.event("DriftCorrected", *case.event),
        what=f"DriftCorrected naming {case.event}",
    )
    assert event["type"] == "Normal"
    assert event["reportingComponent"] == "webapp-operator"
    # The heal does not leave the status broken: it converges back to Running - on the
    # Deployment's next event, and at the latest at the next resync (a level-triggered
    # operator's bound), so the wait covers one resync period and a margin.
    eventually(
        lambda: (
            (get_webapp(running.api, running.namespace, "shop") or {})
            .get("status", {})
            .get("phase")
            == "Running"
        ),
        timeout=OperatorOptions().resync_seconds + 15,
        what="Running again",
    )


@pytest.mark.parametrize("kind", ["Deployment", "Service"])
def test_deleted_child_is_recreated_with_a_new_uid(running: Running, kind: str) -> None:
    old = running.deployment if kind == "Deployment" else running.service
    if kind == "Deployment":
        client.AppsV1Api(running.api).delete_namespaced_deployment("shop", running.namespace)
    else:
        client.CoreV1Api(running.api).delete_namespaced_service("shop", running.namespace)

    def recreated() -> dict[str, Any] | None:
        dep, svc = running.live()
        obj = dep if kind == "Deployment" else svc
        return obj if obj and obj["metadata"]["uid"] != old["metadata"]["uid"] else None

    new = eventually(recreated, timeout=20, what=f"a new {kind}")
    assert new["metadata"]["ownerReferences"][0]["uid"] == running.body["metadata"]["uid"]
    eventually(running.healed, what="desired state")

    def creations() -> int:
        message = f"created {kind} {running.namespace}/shop"
        events = webapp_events(running.api, running.namespace, "shop")
        # The first reconcile's one Event names both children.
        return sum(int(e.get("count") or 1) for e in events if message in e["message"])

    # The first creation and the re-creation, each reported.
    eventually(lambda: creations() >= 2, what=f"a second Created event for the {kind}")


# -- what someone else added ---------------------------------------------------------------


ADDITIONS = {
    "env": (
        [{"op": "add", "path": f"{CONTAINER}/env/-", "value": {"name": "EXTRA", "value": "x"}}],
        "spec.template.spec.containers[webapp].env[EXTRA]: added",
    ),
    "container": (
        [
            {
                "op": "add",
                "path": "/spec/template/spec/containers/-",
                "value": {"name": "sidecar", "image": "proxy:v1"},
            }
        ],
        "spec.template.spec.containers[sidecar]: added",
    ),
    "label": (
        [{"op": "add", "path": "/spec/template/metadata/labels/team", "value": "blue"}],
        "spec.template.metadata.labels.team: added",
    ),
}


@pytest.mark.parametrize("what", list(ADDITIONS), ids=list(ADDITIONS))
def test_fields_added_by_someone_else_are_removed(running: Running, what: str) -> None:
    patch, field = ADDITIONS[what]
    _patch_deployment(running, patch, JSON)

    def clean() -> bool:
        dep, _ = running.live()
        template = (dep or {}).get("spec", {}).get("template", {})
        containers = template.get("spec", {}).get("containers", [])
        env = [e["name"] for e in containers[0].get("env") or []] if containers else []
        return (
            [c["name"] for c in containers] == ["webapp"]
            and env == ["A"]
            and "team" not in template.get("metadata", {}).get("labels", {})
        )

    eventually(clean, timeout=20, what=f"extra {what} removed")
    assert eventually(lambda: running.event("DriftCorrected", field), what=f"event naming {field}")
    assert running.healed()


# -- spec changes and status ---------------------------------------------------------------


def test_spec_change_rolls_out_and_status_follows_the_generation(running: Running) -> None:
    changed = running.webapp.model_copy(
        update={"spec": running.webapp.spec.model_copy(update={"image": "shop:v2", "replicas": 2})}
    )
    body = apply_webapp(running.api, changed, running.namespace)
    generation = body["metadata"]["generation"]
    assert generation > running.body["metadata"]["generation"]
    running.webapp = changed
    eventually(running.healed, what="v2 rolled out")

    def settled() -> dict[str, Any] | None:
        current = get_webapp(running.api, running.namespace, "shop") or {}
        status = current.get("status") or {}
        ok = status.get("observedGeneration") == generation and status.get("phase") == "Running"
        return current if ok and status.get("readyReplicas") == 2 else None

    current = eventually(settled, what="status of the new generation")
    for cond in current["status"]["conditions"]:
        assert cond["observedGeneration"] == generation
    # A spec change is the desired state moving, not drift: reported as Updated.
    eventually(
        lambda: running.event("Updated", "spec.replicas", "containers[webapp].image"),
        what="Updated event",
    )
    assert running.event("DriftCorrected") is None


def test_status_is_not_rewritten_when_nothing_changes(running: Running) -> None:
    before = get_webapp(running.api, running.namespace, "shop")
    assert before is not None
    # A no-op update of the spec (same content) wakes the reconcile but writes nothing.
    apply_webapp(running.api, running.webapp, running.namespace)
    after = get_webapp(running.api, running.namespace, "shop")
    assert after is not None
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]
    assert after["status"] == before["status"]
    # Nor did kopf write its bookkeeping (a diff-base annotation was one PATCH per WebApp).
    kept = after["metadata"].get("annotations") or {}
    assert not [key for key in kept if key.startswith(f"{ANNOTATION_PREFIX}/")]


# -- deletion -------------------------------------------------------------------------------


def test_delete_runs_the_finalizer_then_the_children_are_collected(running: Running) -> None:
    core = client.CoreV1Api(running.api)
    key = f"{running.namespace}.shop"

    def registry() -> dict[str, str]:
        cm = raw(core.read_namespaced_config_map, REGISTRY_CONFIGMAP, OPERATOR_NAMESPACE)
        return dict((cm or {}).get("data") or {})

    eventually(lambda: key in registry(), what="registry entry")
    client.CustomObjectsApi(running.api).delete_namespaced_custom_object(
        "example.com", "v1", running.namespace, "webapps", "shop"
    )
    eventually(
        lambda: get_webapp(running.api, running.namespace, "shop") is None, what="WebApp gone"
    )
    assert key not in registry()  # the cleanup ran before the finalizer was removed
    eventually(
        lambda: running.event("CleanedUp", f"{running.namespace}/shop: removed its registry entry"),
        what="CleanedUp event",
    )
    eventually(lambda: running.live() == (None, None), what="children garbage-collected")


# -- failures ------------------------------------------------------------------------------


def _quota(api: client.ApiClient, namespace: str) -> None:
    client.CoreV1Api(api).create_namespaced_resource_quota(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "no-deployments"},
            "spec": {"hard": {"count/deployments.apps": "0"}},
        },
    )


def _deployments_admitted(api: client.ApiClient, namespace: str) -> bool:
    """Whether the API server admits a Deployment in `namespace` now (a dry run). Its quota
    check lags the quota both ways: a new quota is not enforced until its informer (or a
    live lookup) has it, and a quota it had to look up live stays cached for 30 s after it
    is deleted."""
    deployment = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "admitted-probe"},
        "spec": {
            "selector": {"matchLabels": {"probe": "admitted"}},
            "template": {
                "metadata": {"labels": {"probe": "admitted"}},
                "spec": {"containers": [{"name": "c", "image": "probe:v1"}]},
            },
        },
    }
    try:
        client.AppsV1Api(api).create_namespaced_deployment(namespace, deployment, dry_run="All")
    except client.ApiException as exc:
        if exc.status == 403 and "quota" in str(exc.body):
            return False
        raise
    return True


def test_failure_is_degraded_retried_with_backoff_then_recovered(
    api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    """A real API failure: a ResourceQuota refuses every Deployment in the namespace. The
    WebApp reports it, the operator retries with growing delays, and a spec change ends the
    backoff wait at once (as a new event does in controller-runtime's queue)."""
    _quota(api, namespace)
    # Only once the API server enforces the quota: a Deployment admitted before its quota
    # check saw the new quota would simply be created. A new WebApp's children are created
    # without a dry-run first, so the refusal is the create's (CreateFailed).
    eventually(lambda: not _deployments_admitted(api, namespace), timeout=40, what="quota enforced")
    webapp = make_webapp("shop", replicas=2)
    apply_webapp(api, webapp, namespace)

    def failures() -> list[dict[str, Any]]:
        return [
            e
            for e in webapp_events(api, namespace, "shop")
            if e["reason"] == "CreateFailed" and e["type"] == "Warning"
        ]

    def attempts() -> int:
        return sum(int(e.get("count") or 1) for e in failures())

    eventually(lambda: attempts() >= 5, timeout=30, what="five failed attempts")
    body = get_webapp(api, namespace, "shop")
    degraded = condition(body, "Degraded")
    assert degraded is not None and degraded["status"] == "True"
    assert degraded["reason"] == "CreateFailed"
    assert "exceeded quota" in degraded["message"]
    assert (body or {})["status"]["phase"] == "Degraded"
    # Bounded exponential backoff: 0.5 s, 1 s, 2 s, 4 s -> five attempts take over 7 s.
    first = datetime.fromisoformat(failures()[0]["eventTime"])
    counted = attempts()
    assert (datetime.now(first.tzinfo) - first).total_seconds() > 7.0, counted

    # The obstacle goes and the spec changes: the next attempt does not wait out the backoff
    # (8 s and growing by now).
    client.CoreV1Api(api).delete_namespaced_resource_quota("no-deployments", namespace)
    # The clock starts once the API server admits Deployments again: what is timed is the
    # operator, not the API server's quota cache.
    eventually(lambda: _deployments_admitted(api, namespace), timeout=40, what="quota lifted")
    changed = webapp.model_copy(
        update={"spec": webapp.spec.model_copy(update={"image": "shop:v2"})}
    )
    fixed_at = time.monotonic()
    apply_webapp(api, changed, namespace)
    eventually(lambda: get_deployment(api, namespace, "shop"), timeout=20, what="created")
    assert time.monotonic() - fixed_at < 4.0
    run = Running(api, namespace, changed, body or {}, {}, {})
    eventually(run.healed, timeout=30, what="converged after the obstacle went")

    def recovered() -> dict[str, Any] | None:
        current = get_webapp(api, namespace, "shop")
        cond = condition(current, "Degraded")
        return current if cond and cond["status"] == "False" else None

    current = eventually(recovered, what="Degraded back to False")
    assert condition(current, "Degraded")["reason"] == "AsExpected"  # type: ignore[index]
    dep = get_deployment(api, namespace, "shop")
    assert dep is not None
    assert dep["metadata"]["ownerReferences"][0]["uid"] == current["metadata"]["uid"]
