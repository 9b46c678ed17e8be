"""The heal's hot path on the real cluster: a drifted child of an idle WebApp is patched back
from its watch event on the event loop, once, with the reconcile's Event; a spec change under
way is never undone by it (`webapp_operator.fastheal`, `Controller.heal_hot`)."""

from __future__ import annotations

import re
import time

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import OperatorHandle
from tests.helpers import eventually, make_webapp

from .helpers import Running, get_deployment, run_webapp

pytestmark = pytest.mark.cluster

CHAOS = "chaos-test"


def _corrections(handle: OperatorHandle, since: int, namespace: str) -> list[str]:
    """The operator's log lines of corrections in `namespace` written after byte `since`."""
    with handle.log_path.open("rb") as log:
        log.seek(since)
        text = log.read().decode("utf-8", "replace")
    return re.findall(rf"{re.escape(namespace)}/shop DriftCorrected: .*", text)


def _scale(api: client.ApiClient, namespace: str, replicas: int) -> None:
    client.AppsV1Api(api).patch_namespaced_deployment(
        "shop", namespace, {"spec": {"replicas": replicas}}, field_manager=CHAOS
    )


def test_a_drift_is_patched_back_from_its_watch_event_once(
    api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    running: Running = run_webapp(api, namespace, make_webapp("shop", replicas=3))
    since = operator.log_path.stat().st_size
    _scale(api, namespace, 1)
    eventually(running.healed, timeout=20, what="replicas healed")
    eventually(lambda: running.event("DriftCorrected", "spec.replicas"), what="its Event")
    # The Deployment controller's own writes after the fault and the heal wake the reconcile,
    # which must read the patch back, not correct the drift a second time.
    time.sleep(1.0)
    lines = _corrections(operator, since, namespace)
    assert len(lines) == 1, lines
    # The hot path's stages: no reconcile thread, nothing decoded.
    assert "decided=" in lines[0] and "thread=" not in lines[0], lines[0]


def test_a_spec_change_under_way_is_not_undone(
    api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    running = run_webapp(api, namespace, make_webapp("shop", replicas=3))
    custom = client.CustomObjectsApi(api)
    custom.patch_namespaced_custom_object(
        "example.com", "v1", namespace, "webapps", "shop", {"spec": {"replicas": 2}}
    )
    _scale(api, namespace, 5)  # a drift right behind the spec change

    def at_new_spec() -> bool:
        dep = get_deployment(api, namespace, "shop") or {}
        return dep.get("spec", {}).get("replicas") == 2

    eventually(at_new_spec, timeout=20, what="the new spec's replicas")
    time.sleep(1.0)
    assert at_new_spec(), "an old desired state was restored after the spec change"
    assert running.event("DriftCorrected", "want 3") is None
