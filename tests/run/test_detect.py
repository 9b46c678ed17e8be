"""Time-to-detect from the operator's Events on the WebApp."""

from __future__ import annotations

from datetime import UTC, datetime

from compare.run.detect import first_detection

T0 = datetime(2026, 12, 2, 12, 0, 5, 250000, tzinfo=UTC).timestamp()


def event(reason: str, event_time: str | None = None, last: str | None = None) -> dict[str, object]:
    return {"reason": reason, "eventTime": event_time, "lastTimestamp": last}


def test_first_correction_after_the_injection() -> None:
    events = [
        event("Created", "2026-12-02T12:00:01.000000Z"),  # the initial deploy: before
        event("DriftCorrected", "2026-12-02T12:00:05.900000Z"),
        event("DriftCorrected", "2026-12-02T12:00:05.400000Z"),
        event("ReconcileFailed", "2026-12-02T12:00:05.300000Z"),  # not a correction
    ]
    found = first_detection(events, T0)
    assert found is not None
    assert found.detected_by == "Event DriftCorrected"
    assert found.at is not None and round(found.at - T0, 6) == 0.15


def test_recreation_is_a_detection_too() -> None:
    found = first_detection([event("Created", "2026-12-02T12:00:05.300000+00:00")], T0)
    assert found is not None and found.reason == "Created"


def test_nothing_after_the_injection() -> None:
    assert first_detection([event("DriftCorrected", "2026-12-02T12:00:04.999999Z")], T0) is None
    assert first_detection([], T0) is None


def test_second_precision_names_the_detector_without_a_time() -> None:
    found = first_detection([event("DriftCorrected", None, "2026-12-02T12:00:05Z")], T0)
    assert found is not None and found.at is None
    assert first_detection([event("DriftCorrected", None, "2026-12-02T12:00:04Z")], T0) is None


def test_any_event_on_a_targets_own_custom_resource_kind_is_a_detection() -> None:
    on_shop = {
        **event("Reconciling", "2026-12-02T12:00:05.500000Z"),
        "involvedObject": {"kind": "Shop"},
    }
    # Unknown kinds are not detections unless the target's operator manages that kind.
    assert first_detection([on_shop], T0) is None
    found = first_detection([on_shop], T0, custom=("Shop",))
    assert found is not None and found.detected_by == "Event Reconciling"
    assert found.at is not None and round(found.at - T0, 6) == 0.25
    # Known kinds keep their own reasons: a ReconcileFailed on a WebApp is still no detection.
    failed = {
        **event("ReconcileFailed", "2026-12-02T12:00:05.600000Z"),
        "involvedObject": {"kind": "WebApp"},
    }
    assert first_detection([failed], T0, custom=("Shop",)) is None
