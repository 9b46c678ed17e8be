"""Which pods a reconcile judges against their ReplicaSet's template (`Controller.pod_seen`):
a pod changed in place since this process saw it, or one it found already there; never one
whose events only updated its status (pure, no cluster)."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any, cast

from webapp_operator.handlers import Controller
from webapp_operator.names import INSTANCE_LABEL
from webapp_operator.reconciler import Reconciler

KEY = ("ns", "shop")


def _pod(uid: str = "p1", image: str = "web:v1", created: float | None = None) -> dict[str, Any]:
    at = datetime.fromtimestamp(time.time() + 60 if created is None else created, UTC)
    return {
        "metadata": {
            "uid": uid,
            "namespace": "ns",
            "labels": {INSTANCE_LABEL: "shop"},
            "creationTimestamp": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
        "spec": {"containers": [{"name": "webapp", "image": image}]},
        "status": {"phase": "Pending"},
    }


def _controller() -> Controller:
    controller = Controller(reconciler=cast(Reconciler, object()))
    controller.wakeup(KEY)
    return controller


def test_a_new_pod_its_binding_and_its_status_updates_are_not_judged() -> None:
    controller = _controller()
    controller.pod_seen(_pod(), deleted=False)
    bound = _pod()
    bound["spec"]["nodeName"] = "kwok-node-0"  # the scheduler's binding
    controller.pod_seen(bound, deleted=False)
    running = _pod()
    running["spec"]["nodeName"] = "kwok-node-0"
    running["status"] = {"phase": "Running"}
    controller.pod_seen(running, deleted=False)
    assert controller.suspects(KEY) == frozenset()
    assert not controller.wakeup(KEY).is_set()


def test_a_pod_changed_in_place_is_judged_until_a_reconcile_found_it_right() -> None:
    controller = _controller()
    controller.pod_seen(_pod(), deleted=False)
    controller.pod_seen(_pod(image="evil:v9"), deleted=False)
    assert controller.suspects(KEY) == {"p1"}
    assert controller.wakeup(KEY).is_set()
    # A reconcile that failed before judging it leaves it to judge.
    controller.judged(KEY, frozenset({"p1"}), None)
    assert controller.suspects(KEY) == {"p1"}
    # One that left it (the rate limit) too; one that judged it done does not.
    controller.judged(KEY, frozenset({"p1"}), ("p1",))
    assert controller.suspects(KEY) == {"p1"}
    controller.judged(KEY, frozenset({"p1"}), ())
    assert controller.suspects(KEY) == frozenset()


def test_a_pod_found_at_start_up_is_judged_once() -> None:
    controller = _controller()
    controller.pod_seen(_pod(created=controller.started - 3600), deleted=False)
    assert controller.suspects(KEY) == {"p1"}


def test_a_pod_that_went_is_no_longer_judged() -> None:
    controller = _controller()
    controller.pod_seen(_pod(), deleted=False)
    controller.pod_seen(_pod(image="evil:v9"), deleted=False)
    controller.pod_seen(_pod(image="evil:v9"), deleted=True)
    assert controller.suspects(KEY) == frozenset()


def test_a_pod_judged_while_another_changed_keeps_the_other() -> None:
    controller = _controller()
    for uid in ("p1", "p2"):
        controller.pod_seen(_pod(uid), deleted=False)
        controller.pod_seen(_pod(uid, image="evil:v9"), deleted=False)
    controller.judged(KEY, frozenset({"p1"}), ())
    assert controller.suspects(KEY) == {"p2"}
