"""Time-to-detect from the Events that announce a correction: their own precise time, else
their arrival during the trial (whole-second Events of Flux and Argo CD)."""

from __future__ import annotations

from datetime import UTC, datetime

from compare.kube.events import Arrival, occurrence
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


def _flux(last: str, reason: str = "DriftDetected", count: int = 1) -> dict[str, object]:
    return {
        **event(reason, None, last),
        "count": count,
        "involvedObject": {"kind": "HelmRelease"},
        "metadata": {"uid": "e1"},
    }


def test_a_whole_second_event_is_timed_by_its_arrival() -> None:
    drift = _flux("2026-12-02T12:00:05Z")
    # Read after the trial it names the detector only; watched, its arrival times it.
    unwatched = first_detection([drift], T0)
    assert unwatched is not None and unwatched.at is None
    found = first_detection([drift], T0, arrivals=[Arrival(T0 + 0.6, drift)])
    assert found is not None and found.at == T0 + 0.6
    assert found.detected_by == "Event DriftDetected (seen at arrival)"


def test_the_earliest_arrival_after_the_injection_wins() -> None:
    before = _flux("2026-12-02T12:00:04Z", count=1)
    again = _flux("2026-12-02T12:00:06Z", count=2)  # the aggregated repeat after the fault
    later = _flux("2026-12-02T12:00:07Z", count=3)
    arrivals = [Arrival(T0 - 1.0, before), Arrival(T0 + 2.0, later), Arrival(T0 + 0.9, again)]
    found = first_detection([later], T0, arrivals=arrivals)
    assert found is not None and found.at == T0 + 0.9 and found.on_arrival


def test_an_arrival_of_an_event_that_says_it_is_older_is_no_detection() -> None:
    # A relist after a 410 stamps what it finds new: an Event whose own second is before the
    # injection is not a correction of it, however late it arrived.
    stale = _flux("2026-12-02T12:00:04Z")
    assert first_detection([], T0, arrivals=[Arrival(T0 + 3.0, stale)]) is None


def test_an_events_own_precise_time_wins_over_its_arrival() -> None:
    precise = {
        **event("DriftCorrected", "2026-12-02T12:00:05.400000Z"),
        "involvedObject": {"kind": "WebApp"},
    }
    found = first_detection([], T0, arrivals=[Arrival(T0 + 2.0, precise)])
    assert found is not None and not found.on_arrival
    assert found.at is not None and round(found.at - T0, 6) == 0.15


def test_a_timed_detection_wins_over_an_untimed_earlier_second() -> None:
    untimed = _flux("2026-12-02T12:00:05Z", reason="DriftDetected")
    argo = {
        **event("OperationStarted", None, "2026-12-02T12:00:06Z"),
        "involvedObject": {"kind": "Application"},
    }
    found = first_detection([untimed], T0, arrivals=[Arrival(T0 + 1.1, argo)])
    assert found is not None and found.reason == "OperationStarted" and found.at == T0 + 1.1


def test_a_repeat_of_an_aggregated_event_is_a_new_arrival() -> None:
    assert occurrence(_flux("2026-12-02T12:00:05Z", count=1)) != occurrence(
        _flux("2026-12-02T12:00:06Z", count=2)
    )


def test_a_detection_names_who_posted_it() -> None:
    posted = {
        **event("PodReplaced", "2026-12-02T12:00:05.400000Z"),
        "reportingComponent": "webapp-operator",
    }
    found = first_detection([posted], T0, kinds={"WebApp": ("PodReplaced",)})
    assert found is not None and found.component == "webapp-operator"
    core = {**event("PodReplaced", "2026-12-02T12:00:05.400000Z"), "source": {"component": "op"}}
    found = first_detection([core], T0, kinds={"WebApp": ("PodReplaced",)})
    assert found is not None and found.component == "op"
