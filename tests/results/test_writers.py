"""Who wrote a heal: field managers from `metadata.managedFields`, before and after a heal."""

from __future__ import annotations

from typing import Any

from compare.results.writers import (
    INJECTION_MANAGER,
    announced,
    by_kubernetes,
    restoring_writers,
    writes_of,
)


def _obj(uid: str, *entries: tuple[str, str, str | None]) -> dict[str, Any]:
    fields = []
    for manager, time, subresource in entries:
        entry = {"manager": manager, "operation": "Update", "time": time}
        if subresource:
            entry["subresource"] = subresource
        fields.append(entry)
    return {"metadata": {"uid": uid, "managedFields": fields}}


def test_status_writes_and_the_injection_are_never_writers() -> None:
    obj = _obj(
        "u1",
        ("webapp-operator", "2026-01-01T00:00:01Z", None),
        ("kube-controller-manager", "2026-01-01T00:00:05Z", "status"),
        (INJECTION_MANAGER, "2026-01-01T00:00:04Z", None),
    )
    assert writes_of([obj, None]) == (("u1", "webapp-operator", "2026-01-01T00:00:01Z"),)


def test_the_manager_whose_entry_moved_wrote_the_heal() -> None:
    before = writes_of([_obj("u1", ("op", "2026-01-01T00:00:01Z", None))])
    after = writes_of([_obj("u1", ("op", "2026-01-01T00:00:09Z", None))])
    assert restoring_writers(before, after) == ("op",)


def test_kubernetes_bookkeeping_beside_the_approachs_write_is_not_the_heal() -> None:
    # The deployment controller writes its revision annotation after every template change.
    before = writes_of([_obj("u1", ("op", "T1", None), ("kube-controller-manager", "T1", None))])
    after = writes_of([_obj("u1", ("op", "T2", None), ("kube-controller-manager", "T2", None))])
    assert restoring_writers(before, after) == ("op",)


def test_a_new_object_is_written_by_whoever_made_it() -> None:
    before = writes_of([_obj("old", ("op", "T1", None))])
    after = writes_of([_obj("new", ("kube-controller-manager", "T1", None))])
    assert restoring_writers(before, after) == ("kube-controller-manager",)
    assert by_kubernetes(restoring_writers(before, after))


def test_writes_in_the_same_second_fall_back_to_the_latest_writers() -> None:
    both = writes_of([_obj("u1", ("op", "T2", None), ("helm", "T1", None))])
    assert restoring_writers(both, both) == ("op",)


def test_nothing_recorded_names_no_one() -> None:
    assert restoring_writers((), ()) == ()
    assert not by_kubernetes(())
    assert not by_kubernetes(["kube-controller-manager", "helm-controller"])


def test_a_heal_kubernetes_wrote_but_the_approach_set_off_is_the_approachs() -> None:
    # The operator deleted a pod changed in place (its Event says so); the ReplicaSet made
    # the new one.
    kube = ("kube-controller-manager",)
    assert announced(kube, "webapp-operator") == ("webapp-operator", "kube-controller-manager")
    assert not by_kubernetes(announced(kube, "webapp-operator"))
    assert announced(kube, "") == kube  # no Event: Kubernetes' own
    assert announced(("helm-controller",), "helm-controller") == ("helm-controller",)
    assert announced((), "webapp-operator") == ()  # nothing healed: no one
