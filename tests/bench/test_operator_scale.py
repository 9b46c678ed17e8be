"""The pure parts of `bench/operator_scale.py`'s ideal operator (`--ideal`): its CRD is the
WebApp's under another group, its children are the floor's owned by it, its requests are
counted by the resource they name. No cluster (the bench itself runs them on one)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import ModuleType

import pytest

from compare.judge.reading import Reading
from compare.judge.rest import resource_path
from tests.helpers import bench_module
from webapp_operator.crd import build_crd


@pytest.fixture(scope="module")
def scale() -> ModuleType:
    return bench_module("operator_scale")


def test_the_ideal_crd_is_the_webapps_under_its_own_group(scale: ModuleType) -> None:
    webapp, ideal = build_crd(), scale.ideal_crd()
    assert ideal["spec"]["group"] == "ideal.bench.example.com" != webapp["spec"]["group"]
    assert ideal["metadata"]["name"] == "webapps.ideal.bench.example.com"
    assert ideal["spec"]["versions"] == webapp["spec"]["versions"]  # schema, status subresource
    assert "shortNames" not in ideal["spec"]["names"]
    assert build_crd()["spec"]["names"]["shortNames"]  # the WebApp's own is left as it was


def test_children_are_the_floors_owned_by_the_custom_object(scale: ModuleType) -> None:
    webapp = scale.webapps(1)[0]
    owner = {"apiVersion": scale.IDEAL_VERSION, "kind": "WebApp", "name": webapp.name, "uid": "u"}
    floor = scale.floor_objects(webapp, "ns")
    owned = scale.floor_objects(webapp, "ns", owner)
    assert [o["kind"] for o in owned] == ["Deployment", "Service"]
    for bare, child in zip(floor, owned, strict=True):
        assert "ownerReferences" not in bare["metadata"]
        assert child["metadata"].pop("ownerReferences") == [owner]
        assert child == bare


def test_requests_are_counted_by_resource_and_subresource(scale: ModuleType) -> None:
    group = scale.IDEAL_VERSION
    assert scale.path_resource(resource_path(group, "webapps", "ns")) == "webapps"
    assert scale.path_resource(resource_path(group, "webapps", "ns", "a")) == "webapps"
    named = resource_path(group, "webapps", "ns", "a", "status")
    assert scale.path_resource(named) == "webapps/status"
    assert scale.path_resource(resource_path("v1", "events", "ns")) == "events"
    assert scale.path_resource(resource_path("apps/v1", "deployments", "ns")) == "deployments"


def test_the_event_names_the_custom_object(scale: ModuleType) -> None:
    obj = {
        "apiVersion": scale.IDEAL_VERSION,
        "kind": "WebApp",
        "metadata": {"name": "a", "namespace": "ns", "uid": "u-1"},
    }
    event = scale.ideal_event(obj, "Created", "created it", datetime(2026, 1, 1, tzinfo=UTC))
    assert event["involvedObject"] == {
        "apiVersion": scale.IDEAL_VERSION,
        "kind": "WebApp",
        "name": "a",
        "namespace": "ns",
        "uid": "u-1",
    }
    assert (event["reason"], event["type"], event["metadata"]["namespace"]) == (
        "Created",
        "Normal",
        "ns",
    )


def _deployment(name: str, generation: int = 1, **status: int) -> dict[str, object]:
    return {
        "metadata": {"name": name, "generation": generation},
        "spec": {"replicas": 2},
        "status": {"observedGeneration": 1, **status},
    }


def test_a_deployment_is_ready_when_its_rollout_of_every_replica_is(scale: ModuleType) -> None:
    full = {"readyReplicas": 2, "updatedReplicas": 2, "replicas": 2}
    assert scale.deployment_ready(_deployment("a", **full))
    assert not scale.deployment_ready(_deployment("a", generation=2, **full))  # not observed
    assert not scale.deployment_ready(_deployment("a", **{**full, "readyReplicas": 1}))
    assert not scale.deployment_ready(_deployment("a", **{**full, "updatedReplicas": 1}))
    assert not scale.deployment_ready(_deployment("a", **{**full, "replicas": 3}))  # old pod
    assert not scale.deployment_ready({"metadata": {"name": "a", "generation": 1}})


def test_all_ready_wants_every_deployment_ready_and_every_service(scale: ModuleType) -> None:
    ready = _deployment("a", readyReplicas=2, updatedReplicas=2, replicas=2)
    pending = _deployment("b", readyReplicas=0, updatedReplicas=2, replicas=2)

    def reading(deployments: list[dict[str, object]], services: list[str]) -> Reading:
        return Reading(
            0.0,
            {
                "Deployment": {str(i): d for i, d in enumerate(deployments)},
                "Service": {s: {"metadata": {"name": s}} for s in services},
            },
        )

    assert scale.all_ready(reading([ready, ready], ["a", "b"]), 2)
    assert not scale.all_ready(reading([ready, pending], ["a", "b"]), 2)
    assert not scale.all_ready(reading([ready, ready], ["a"]), 2)  # a Service missing
    assert not scale.all_ready(reading([ready], ["a", "b"]), 2)  # a Deployment missing
    assert not scale.all_ready(reading([], []), 2)


def test_a_webapp_is_running_when_its_status_says_so_for_its_generation(
    scale: ModuleType,
) -> None:
    def webapp(generation: int, **status: object) -> dict[str, object]:
        return {"metadata": {"name": "a", "generation": generation}, "status": status}

    assert scale.webapp_running(webapp(2, phase="Running", observedGeneration=2))
    assert not scale.webapp_running(webapp(2, phase="Running", observedGeneration=1))
    assert not scale.webapp_running(webapp(1, phase="Pending", observedGeneration=1))
    assert not scale.webapp_running({"metadata": {"name": "a", "generation": 1}})
