"""The pure parts of replacing pods changed in place: which pods drifted (the judge's rule)
and which PodDisruptionBudget selects a pod."""

from __future__ import annotations

from typing import Any

from webapp_operator.pods import drifted_pods, selects

TEMPLATE = {
    "metadata": {"labels": {"app": "shop", "pod-template-hash": "abc"}},
    "spec": {"containers": [{"name": "webapp", "image": "myapp:1"}]},
}
RS = {"kind": "ReplicaSet", "metadata": {"name": "shop-abc", "uid": "rs1", "resourceVersion": "1"}}


def _pod(name: str, image: str, **meta: Any) -> dict[str, Any]:
    return {
        "metadata": {
            "name": name,
            "uid": f"uid-{name}-{image}",
            "resourceVersion": "1",
            "labels": {"app": "shop", "pod-template-hash": "abc"},
            "ownerReferences": [{"kind": "ReplicaSet", "name": "shop-abc", "controller": True}],
            **meta,
        },
        # What pod creation adds (the scheduler's node) is no drift.
        "spec": {"nodeName": "n1", "containers": [{"name": "webapp", "image": image}]},
    }


def test_only_a_pod_that_differs_from_its_template_is_drifted() -> None:
    rs = {**RS, "spec": {"template": TEMPLATE}}
    pods = [
        _pod("good", "myapp:1"),
        _pod("changed", "myapp:in-place"),
        _pod("going", "myapp:in-place", deletionTimestamp="2026-01-01T00:00:00Z"),
    ]
    (found,) = drifted_pods(pods, {"shop-abc": rs})
    assert found.name == "changed"
    assert any("myapp:in-place" in f and "image" in f for f in found.fields)
    # A pod whose ReplicaSet is not known is not judged.
    assert drifted_pods(pods, {}) == []


def test_label_selectors_of_disruption_budgets() -> None:
    labels = {"app": "shop", "tier": "web"}
    assert selects({}, labels)  # policy/v1: an empty selector selects every pod
    assert not selects(None, labels)
    assert selects({"matchLabels": {"app": "shop"}}, labels)
    assert not selects({"matchLabels": {"app": "other"}}, labels)
    In = {"key": "tier", "operator": "In", "values": ["web"]}
    assert selects({"matchExpressions": [In]}, labels)
    assert not selects({"matchExpressions": [{**In, "operator": "NotIn"}]}, labels)
    assert selects({"matchExpressions": [{"key": "x", "operator": "DoesNotExist"}]}, labels)
    assert not selects({"matchExpressions": [{"key": "x", "operator": "Exists"}]}, labels)
