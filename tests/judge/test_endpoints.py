"""EndpointSlices for a desired Service: its controllers' are its own, anyone else's is drift
(`compare.judge.endpoints`), and a Service makes the judge read them."""

from __future__ import annotations

from typing import Any

from compare.judge import Reading, as_given, problems
from compare.judge.endpoints import MANAGED_BY, SERVICE_NAME, foreign_slices, slice_problems
from compare.run.evidence import View

SERVICE = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"}, "spec": {}}


def _slice(name: str, service: str = "web", manager: str | None = None) -> dict[str, Any]:
    labels = {SERVICE_NAME: service}
    if manager is not None:
        labels[MANAGED_BY] = manager
    return {
        "kind": "EndpointSlice",
        "metadata": {"name": name, "labels": labels},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["192.0.2.10"]}],
    }


def _reading(*slices: dict[str, Any]) -> Reading:
    objects = {
        "Service": {"web": SERVICE},
        "EndpointSlice": {str(s["metadata"]["name"]): s for s in slices},
    }
    return Reading(0.0, objects)


def test_a_desired_service_makes_the_judge_read_endpointslices() -> None:
    assert "EndpointSlice" in as_given([SERVICE]).kinds
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    assert "EndpointSlice" not in as_given([config]).kinds


def test_the_controllers_slices_are_the_services_own() -> None:
    desired = as_given([SERVICE])
    reading = _reading(
        _slice("web-abc", manager="endpointslice-controller.k8s.io"),
        _slice("web-mirror", manager="endpointslicemirroring-controller.k8s.io"),
        _slice("other", service="other"),  # another Service's
    )
    assert foreign_slices(desired, reading) == {}
    assert problems(desired, reading) == []


def test_a_slice_someone_else_added_for_the_service_is_drift() -> None:
    desired = as_given([SERVICE])
    reading = _reading(
        _slice("web-abc", manager="endpointslice-controller.k8s.io"),
        _slice("web-foreign"),
        _slice("web-tool", manager="some-tool"),
    )
    assert [s["metadata"]["name"] for s in foreign_slices(desired, reading)["service"]] == [
        "web-foreign",
        "web-tool",
    ]
    found = problems(desired, reading)
    assert found == slice_problems(desired, reading)
    assert found[0] == (
        "service: EndpointSlice web-foreign routes it to 192.0.2.10 but is not its"
        " controller's (managed-by: none)"
    )
    assert "(managed-by: some-tool)" in found[1]
    # The evidence's field reads their names.
    assert View.of(desired, reading).roots()["endpointslices"] == {
        "foreign": ["web-foreign", "web-tool"]
    }


def test_a_desired_slice_is_judged_as_an_object_not_as_foreign() -> None:
    own = _slice("web-static")
    desired = as_given([SERVICE, {"apiVersion": "discovery.k8s.io/v1", **own}])
    assert foreign_slices(desired, _reading(own)) == {}
