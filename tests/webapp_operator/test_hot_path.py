"""When a child's watch event is healed on the loop (`Controller.heal_hot`), and when it is left
to the WebApp's reconcile: only a WebApp whose reconcile has nothing pending (pure asyncio, no
cluster; what the hot path then sends is tested on the cluster, test_fastheal.py)."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any, cast

import kopf
import pytest
from kopf._core.engines import posting  # its Event queue: what kopf.event() fills
from kubernetes import client

from compare.judge import DesiredObject
from webapp_operator.builders import owner_reference
from webapp_operator.compact import PackedObject
from webapp_operator.fastheal import Healed, Healer
from webapp_operator.handlers import Controller, delivered
from webapp_operator.reconciler import Reconciler

KEY = ("ns", "shop")
WEBAPP: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {"name": "shop", "namespace": "ns", "uid": "u-1", "generation": 2},
}


def _child(kind: str = "Deployment", version: str = "10") -> dict[str, Any]:
    return {
        "kind": kind,
        "metadata": {
            "name": "shop",
            "namespace": "ns",
            "resourceVersion": version,
            "ownerReferences": [owner_reference(WEBAPP)],
        },
        "spec": {"replicas": 1},
    }


DESIRED = DesiredObject(
    "Deployment", "shop", "deployment", {"spec": {"replicas": 3}}, {"spec": {"replicas": 3}}
)


class Cache:
    """The reconciler's cache of desired children, as `heal_hot` reads it."""

    def __init__(self, desired: DesiredObject | None = DESIRED) -> None:
        self.desired = desired

    def cached_child(self, key: Any, body: Mapping[str, Any], kind: str) -> DesiredObject | None:
        return self.desired if self.desired is not None and self.desired.kind == kind else None


class Recorder(Healer):
    """A healer that records what it is asked to heal and sends nothing."""

    def __init__(self, answer: Healed | None = None) -> None:
        super().__init__(cast(client.ApiClient, object()), timeout=1.0)
        self.asked: list[Mapping[str, Any]] = []
        self.answer = answer

    async def heal(
        self, desired: DesiredObject, live: Mapping[str, Any], webapp: Mapping[str, Any]
    ) -> Healed | None:
        self.asked.append(live)
        return self.answer


def _controller(healer: Healer | None, cache: Cache | None = None) -> Controller:
    controller = Controller(reconciler=cast(Reconciler, cache or Cache()), healer=healer)
    controller.live(KEY, cast(Any, WEBAPP))
    controller.wakeup(KEY)
    controller.attempted(KEY, 2)
    return controller


def _heal(controller: Controller, child: dict[str, Any]) -> bool:
    return asyncio.run(controller.heal_hot(child))


def test_an_idle_webapp_at_its_generation_is_healed_from_the_event() -> None:
    healer = Recorder()
    assert not _heal(_controller(healer), _child())  # the healer found nothing to send
    assert len(healer.asked) == 1


def test_what_was_patched_is_read_back_and_reported() -> None:
    updated = {**_child(version="11"), "spec": {"replicas": 3}}
    healer = Recorder(Healed("Deployment", "10", updated, ("spec.replicas: 1 -> 3",), {}))
    controller = _controller(healer)

    async def heal() -> tuple[bool, asyncio.Queue[Any]]:
        # kopf's Event posting, as the operator runs it: the queue its poster sends from.
        queue: asyncio.Queue[Any] = asyncio.Queue()
        posting.settings_var.set(kopf.OperatorSettings())
        posting.event_queue_var.set(queue)
        posting.event_queue_loop_var.set(asyncio.get_running_loop())
        return await controller.heal_hot(_child()), queue

    healed, queue = asyncio.run(heal())
    assert healed and controller.counters.changes == 1
    event = queue.get_nowait()
    assert (event.reason, event.type) == ("DriftCorrected", "Normal")
    assert "spec.replicas: 1 -> 3" in event.message
    # Read-your-writes: the reconcile sees the patched object until the watch delivers it.
    seen = PackedObject(_child(version="10"))
    child = controller.child("Deployment", "ns", "shop", {KEY: [seen]})
    assert child is not None and child.unpack()["spec"] == {"replicas": 3}


def test_an_immutable_field_left_is_the_reconciles() -> None:
    healer = Recorder(Healed("Service", "10", _child("Service", "11"), (), {}))
    cache = Cache(DesiredObject("Service", "shop", "service", {}, {}))
    assert not _heal(_controller(healer, cache), _child("Service"))
    assert len(healer.asked) == 1


@pytest.mark.parametrize(
    "pending",
    ["kicked", "failed", "new-generation", "reconciling", "deleting", "no-cache", "our-write"],
)
def test_a_webapp_with_anything_pending_is_left_to_its_reconcile(pending: str) -> None:
    healer = Recorder()
    controller = _controller(healer, Cache(None) if pending == "no-cache" else None)
    if pending == "kicked":
        controller.kick(KEY)
    elif pending == "failed":
        controller.failed(KEY)
    elif pending == "new-generation":
        controller.attempted(KEY, 1)
    elif pending == "deleting":
        meta = {**cast(dict[str, Any], WEBAPP["metadata"]), "deletionTimestamp": "2026-12-07"}
        deleting = {**WEBAPP, "metadata": meta}
        controller.live(KEY, cast(Any, deleting))
    elif pending == "our-write":
        # A write of ours (resourceVersion 12) the watch has not delivered yet.
        controller.wrote("ns", (("Deployment", "shop", "10", PackedObject(_child(version="12"))),))

    async def attempt() -> bool:
        if pending == "reconciling":
            async with controller.turn(KEY):
                return await controller.heal_hot(_child())
        return await controller.heal_hot(_child())

    assert not asyncio.run(attempt())
    assert healer.asked == []


def test_our_write_delivered_lets_the_next_event_through() -> None:
    healer = Recorder()
    controller = _controller(healer)
    controller.wrote("ns", (("Deployment", "shop", "10", PackedObject(_child(version="12"))),))
    _heal(controller, _child(version="12"))
    assert len(healer.asked) == 1


def test_without_a_healer_or_for_another_kind_nothing_is_asked() -> None:
    assert not _heal(_controller(None), _child())
    healer = Recorder()
    assert not _heal(_controller(healer), _child("Pod"))
    assert healer.asked == []


@pytest.mark.parametrize(
    ("seen", "delivered_yet"),
    [
        ("10", False),  # still the version our write replaced
        ("11", False),  # another writer's update of it (the Deployment controller's status)
        ("12", True),  # our write
        ("13", True),  # something after it
        (None, True),  # gone from the watch: nothing of ours to read back
    ],
)
def test_our_write_is_read_back_until_the_watch_shows_it(
    seen: str | None, delivered_yet: bool
) -> None:
    assert delivered(seen, "10", "12") is delivered_yet


def test_versions_that_are_not_numbers_are_only_compared_for_equality() -> None:
    assert not delivered("a", "a", "c")
    assert delivered("b", "a", "c")
