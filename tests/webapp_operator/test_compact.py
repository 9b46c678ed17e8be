"""What the operator keeps per WebApp, packed (`webapp_operator.compact`): the children in the
indices, what a reconcile wrote, the desired objects. Unit tests, no cluster."""

from __future__ import annotations

import copy
import json
import sys
from collections.abc import Mapping
from typing import Any, cast

from kubernetes import client

from compare.judge import DesiredObject, DesiredObjects
from tests.helpers import make_webapp
from webapp_operator.builders import build_deployment, build_service, owner_reference
from webapp_operator.compact import Packed, PackedObject, lean
from webapp_operator.handlers import Controller, reconcile_packed
from webapp_operator.reconciler import Outcome, Reconciler, _pack_desired, _unpack_desired
from webapp_operator.registry import Registry

BODY: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {"name": "shop", "namespace": "ns", "uid": "1234"},
}
MANAGED = [{"manager": "kube-controller-manager", "operation": "Update", "fieldsV1": {"f:x": {}}}]


def _live(kind: str = "Deployment", version: str = "7") -> dict[str, Any]:
    """A child as a watch delivers it: built, then what the API server adds."""
    webapp = make_webapp("shop", env=[{"name": "A", "value": "ü €"}])
    build = build_deployment if kind == "Deployment" else build_service
    obj = build(webapp, "ns", owner_reference(BODY))
    obj["metadata"] |= {"uid": "u-1", "resourceVersion": version, "managedFields": MANAGED}
    obj["status"] = {"replicas": 2, "readyReplicas": 2, "conditions": [{"type": "Available"}]}
    return obj


def _deep_size(value: Any) -> int:
    if isinstance(value, Mapping):
        inner = sum(_deep_size(k) + _deep_size(v) for k, v in value.items())
        return sys.getsizeof(value) + inner
    if isinstance(value, list):
        return sys.getsizeof(value) + sum(_deep_size(v) for v in value)
    return sys.getsizeof(value)


def test_a_packed_value_unpacks_equal_in_order_and_independent() -> None:
    obj = _live()
    packed = Packed(obj)
    first = packed.unpack()
    assert first == obj
    assert json.dumps(first) == json.dumps(obj)  # key order too: messages and patches keep it
    first["spec"]["replicas"] = 99  # a reconcile changing what it read ...
    first["metadata"]["labels"].clear()
    assert packed.unpack() == obj  # ... changes nothing kept
    assert packed.unpack() is not packed.unpack()


def test_a_packed_child_is_a_fraction_of_the_object() -> None:
    obj = lean(_live())
    packed = PackedObject(obj)
    # The point of packing: a Deployment as dictionaries is ~10x its compressed JSON.
    assert packed.nbytes * 8 < _deep_size(obj), (packed.nbytes, _deep_size(obj))


def test_lean_drops_managed_fields_and_leaves_the_object_alone() -> None:
    obj = _live()
    before = copy.deepcopy(obj)
    slim = lean(obj)
    assert "managedFields" not in slim["metadata"]
    assert {k: v for k, v in slim["metadata"].items()} == {
        k: v for k, v in obj["metadata"].items() if k != "managedFields"
    }
    assert obj == before
    assert lean({"kind": "Thing"}) == {"kind": "Thing"}


def test_a_packed_object_knows_its_resource_version() -> None:
    assert PackedObject(_live(version="42")).resource_version == "42"
    assert PackedObject({"metadata": {}}).resource_version is None
    assert PackedObject({}).resource_version is None


def _index(*objs: dict[str, Any]) -> dict[tuple[str, str], list[PackedObject]]:
    """As kopf's index holds the handler's values: key -> a store of packed children."""
    return {("ns", o["metadata"]["name"]): [PackedObject(lean(o))] for o in objs}


def _unpacked(value: PackedObject | None) -> dict[str, Any] | None:
    return None if value is None else cast(dict[str, Any], value.unpack())


class _Recording:
    """A stand-in reconciler: records what it was given and reports writing `written`."""

    def __init__(self, written: tuple[tuple[str, str | None, dict[str, Any]], ...]) -> None:
        self.written = written
        self.seen: list[Any] = []

    def reconcile(self, body: Mapping[str, Any], children: Any, pods: Any = ((), {})) -> Outcome:
        self.seen.append(children)
        return Outcome(generation=3, written=self.written)

    def forget(self, key: tuple[str, str]) -> None:
        pass


def test_read_your_writes_with_packed_children() -> None:
    controller = Controller(reconciler=cast(Reconciler, _Recording(())))
    old, new = _live(version="7"), _live(version="8")
    assert _unpacked(controller.child("Deployment", "ns", "shop", _index(old))) == lean(old)
    assert controller.child("Deployment", "ns", "gone", _index(old)) is None
    # A reconcile replaced version 7 with 8: until the watch shows 8, the write is the child.
    controller.wrote("ns", (("Deployment", "shop", "7", PackedObject(lean(new))),))
    assert _unpacked(controller.child("Deployment", "ns", "shop", _index(old))) == lean(new)
    assert _unpacked(controller.child("Deployment", "ns", "shop", _index(new))) == lean(new)
    assert controller._written == {}
    # A child the reconcile created (it replaced nothing): its write until the watch has it.
    controller.wrote(
        "ns",
        (
            (
                "Service",
                "shop",
                None,
                PackedObject(lean(_live("Service"))),
            ),
        ),
    )
    assert controller.child("Service", "ns", "shop", {}) is not None
    controller.forget(("ns", "shop"))
    assert controller.child("Service", "ns", "shop", {}) is None


def test_reconcile_packed_unpacks_the_children_and_packs_the_writes() -> None:
    live = _live(version="8")
    recording = _Recording((("Deployment", "7", live),))
    children = {"Deployment": PackedObject(lean(_live(version="7"))), "Service": None}
    outcome, written = reconcile_packed(cast(Reconciler, recording), BODY, children)
    assert recording.seen == [{"Deployment": lean(_live(version="7")), "Service": None}]
    assert outcome.generation == 3 and outcome.written == ()  # the writes come back packed
    [(kind, name, before, packed)] = written
    assert (kind, name, before, packed.resource_version) == ("Deployment", "shop", "7", "8")
    assert packed.unpack() == lean(live)  # as the index would hold it: no managedFields


def test_desired_objects_round_trip() -> None:
    webapp = make_webapp("shop")
    owner = owner_reference(BODY)
    raw = [build_deployment(webapp, "ns", owner), build_service(webapp, "ns", owner)]
    defaulted = [{**copy.deepcopy(r), "status": {}} for r in raw]
    desired = DesiredObjects(
        tuple(
            DesiredObject(r["kind"], "shop", r["kind"].lower(), r, d)
            for r, d in zip(raw, defaulted, strict=True)
        )
    )
    again = _unpack_desired(_pack_desired(desired))
    assert again == desired
    assert again.items[0].raw is not desired.items[0].raw


def test_the_status_last_written_is_not_written_again() -> None:
    """Kept packed per WebApp: the same status for the same WebApp version is written once,
    a different one (or the same one for a newer version the watch shows) again."""
    reconciler = Reconciler(client.ApiClient(), cast(Registry, None))
    patched: list[dict[str, Any]] = []

    def patch_status(namespace: str, name: str, status: Mapping[str, Any]) -> None:
        patched.append(dict(status))

    reconciler._patch_status = patch_status  # type: ignore[method-assign]
    body = {**BODY, "metadata": {**BODY["metadata"], "resourceVersion": "5"}}
    running = {"phase": "Running", "conditions": [{"type": "Available", "status": "True"}]}
    assert reconciler._write_status(body, running)
    assert not reconciler._write_status(body, copy.deepcopy(running))
    assert reconciler._write_status(body, {**running, "phase": "Degraded"})
    newer = {**body, "metadata": {**body["metadata"], "resourceVersion": "6"}}
    assert reconciler._write_status(newer, {**running, "phase": "Degraded"})
    assert not reconciler._write_status({**newer, "status": running}, running)
    assert [s["phase"] for s in patched] == ["Running", "Degraded", "Degraded"]
    reconciler.forget(("ns", "shop"))
    assert reconciler._write_status(body, running)
