"""What keeps the operator's API requests per WebApp down, as pure functions: one Event per
reason per reconcile, and no PATCH that only carries kopf's marker."""

from __future__ import annotations

from typing import Any

import kopf

from webapp_operator.names import ANNOTATION_PREFIX
from webapp_operator.reconciler import Change, event_messages
from webapp_operator.settings import ProgressAnnotations, drop_lone_marker

MARKER = f"{ANNOTATION_PREFIX}/kopf-managed"


def test_one_event_per_reason_in_first_seen_order() -> None:
    changes = [
        Change("Created", "Deployment", "ns", "shop"),
        Change("DriftCorrected", "Service", "ns", "shop", ("spec.ports",)),
        Change("Created", "Service", "ns", "cart"),
    ]
    assert event_messages(changes) == [
        ("Created", "created Deployment ns/shop; created Service ns/cart"),
        ("DriftCorrected", "corrected Service ns/shop: spec.ports"),
    ]
    assert event_messages([]) == []


def test_a_joined_message_is_cut_to_an_events_size() -> None:
    changes = [Change("Created", "Deployment", "ns", f"app-{i:04d}-" + "x" * 40) for i in range(50)]
    [(reason, message)] = event_messages(changes)
    assert reason == "Created" and len(message) == 900 and message.endswith("...")


def _body(annotations: dict[str, str]) -> kopf.Body:
    return kopf.Body({"metadata": {"name": "shop", "annotations": annotations}})


def test_a_handler_done_at_once_leaves_an_empty_patch() -> None:
    """The finalizer's handler succeeded in one pass: kopf stores and purges its progress;
    nothing is left to write (before: a PATCH holding only the marker)."""
    storage = ProgressAnnotations(prefix=ANNOTATION_PREFIX)
    body = _body({})
    patch = kopf.Patch()
    storage.store(key=kopf.HandlerId("cleanup"), record={"success": True}, body=body, patch=patch)
    assert MARKER in patch["metadata"]["annotations"]
    storage.purge(key=kopf.HandlerId("cleanup"), body=body, patch=patch)
    assert dict(patch) == {}


def test_the_marker_stays_while_anything_of_ours_is_left() -> None:
    kept: dict[str, Any] = {"metadata": {"annotations": {MARKER: "yes", "other/x": "1"}}}
    # Another record of ours stays on the object (a handler still retried).
    drop_lone_marker(ANNOTATION_PREFIX, {f"{ANNOTATION_PREFIX}/retried": "{}"}, kept)
    assert MARKER in kept["metadata"]["annotations"]
    # A record written in the same patch.
    written: dict[str, Any] = {
        "metadata": {"annotations": {MARKER: "yes", f"{ANNOTATION_PREFIX}/h": "{}"}}
    }
    drop_lone_marker(ANNOTATION_PREFIX, {}, written)
    assert MARKER in written["metadata"]["annotations"]


def test_the_marker_goes_when_the_patch_removes_the_last_record() -> None:
    record = f"{ANNOTATION_PREFIX}/cleanup"
    patch: dict[str, Any] = {"metadata": {"annotations": {MARKER: "yes", record: None}}}
    drop_lone_marker(ANNOTATION_PREFIX, {record: "{}"}, patch)
    assert patch == {"metadata": {"annotations": {record: None}}}
    # Someone else's annotation in the same patch is left alone.
    mixed: dict[str, Any] = {"metadata": {"annotations": {MARKER: "yes", "team/x": "1"}}}
    drop_lone_marker(ANNOTATION_PREFIX, {}, mixed)
    assert mixed == {"metadata": {"annotations": {"team/x": "1"}}}
