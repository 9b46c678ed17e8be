"""Time-to-detect: when an approach announced a correction with an Event.

Each approach says which Events announce its corrections (`Approach.detector`: reasons per
kind of the object they are posted on; none for plain Helm, where detection is not
observable). The first such Event after the injection is the detection; its `eventTime`
(microseconds, stamped on this machine's clock) gives the time. Events with second-precision
timestamps only (Flux's, Argo CD's) are timed by their arrival instead: the trial watches the
Events of the object while it runs (`compare.kube.events.EventWatch`, started before the
injection), and the first such Event's arrival on this machine - an upper bound of when the
controller announced it - is the detection, recorded as `Event <Reason> (seen at arrival)`.
Without an arrival (no watch, or the Event came only in the read after the trial) such an
Event names the detector without a time.

A target's operator manages a custom resource of its own kind and posts its own reasons: on a
kind the toolkit does not know (`custom`), the first Event of any reason the operator posts on
the resource after the injection is the detection - the operator reacted to the fault.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from compare.approaches import REGISTRY
from compare.judge import REQUEST_TIMEOUT
from compare.kube.events import Arrival
from compare.webapp import KIND

Kinds = Mapping[str, tuple[str, ...]]


def detectors() -> dict[str, tuple[str, ...]]:
    """The Events that announce a correction, per kind of the object they are posted on, of
    every registered approach (what a caller that names no approach's detector looks for),
    read when asked: an approach registered later is among them."""
    return {
        kind: reasons
        for approach in REGISTRY
        if (detector := approach.detector()) is not None
        for kind, reasons in detector.kinds.items()
    }


@dataclass(frozen=True)
class Detection:
    reason: str
    at: float | None  # time.time() seconds; None without a precise timestamp or an arrival
    # Timed by the Event's arrival on this machine (it has whole-second timestamps only).
    on_arrival: bool = False
    # Who posted it (the Event's reporting component, e.g. `webapp-operator`): the approach
    # acted, even where Kubernetes' controllers wrote the objects that healed.
    component: str = ""

    @property
    def detected_by(self) -> str:
        return f"Event {self.reason}" + (" (seen at arrival)" if self.on_arrival else "")


def first_detection(
    events: Sequence[Mapping[str, Any]],
    since: float,
    custom: Sequence[str] = (),
    kinds: Kinds | None = None,
    arrivals: Sequence[Arrival] = (),
) -> Detection | None:
    """The earliest correction Event at or after `since` (pure, for tests): a known
    correction reason on a known kind, or any reason on one of the `custom` kinds.

    Timed by its own `eventTime` when it has one, else by its arrival (`arrivals`, from the
    watch during the trial); an Event with neither names the detector without a time, and
    only when no timed one was found."""
    kinds = detectors() if kinds is None else kinds
    timed: list[tuple[float, Detection]] = []
    untimed: list[tuple[float, Detection]] = []
    for event in [*events, *(a.event for a in arrivals)]:
        reason = event.get("reason")
        if not _announces(event, kinds, custom):
            continue
        precise = _time(event.get("eventTime"))
        if precise is not None:
            if precise >= since:
                timed.append((precise, Detection(str(reason), precise, component=_poster(event))))
            continue
        coarse = _time(event.get("lastTimestamp") or event.get("firstTimestamp"))
        # Whole seconds: only the second of the injection or later can be a correction of it.
        if coarse is not None and coarse >= int(since):
            untimed.append((coarse, Detection(str(reason), None, component=_poster(event))))
    for arrival in arrivals:
        event = arrival.event
        if not _announces(event, kinds, custom) or _time(event.get("eventTime")) is not None:
            continue
        coarse = _time(event.get("lastTimestamp") or event.get("firstTimestamp"))
        # It arrived after the injection began and says so itself (its second is not earlier).
        if arrival.at >= since and (coarse is None or coarse >= int(since)):
            detection = Detection(
                str(event.get("reason")), arrival.at, on_arrival=True, component=_poster(event)
            )
            timed.append((arrival.at, detection))
    found = timed or untimed
    return min(found, key=lambda item: item[0])[1] if found else None


def _poster(event: Mapping[str, Any]) -> str:
    """The component that posted the Event (events.k8s.io's reportingComponent, else the core
    Event's source)."""
    source = event.get("source") or {}
    return str(event.get("reportingComponent") or source.get("component") or "")


def _announces(event: Mapping[str, Any], kinds: Kinds, custom: Sequence[str]) -> bool:
    reason = event.get("reason")
    kind = (event.get("involvedObject") or {}).get("kind", KIND)
    return reason in kinds.get(kind, ()) or (kind in custom and bool(reason))


def read_events(
    api: client.ApiClient,
    namespace: str,
    name: str,
    custom: Sequence[str] = (),
    kinds: Kinds | None = None,
) -> list[dict[str, Any]]:
    """The Events on an object called `name` of one of the detector's kinds (the WebApp, the
    HelmRelease named after it) or of one of the `custom` kinds."""
    selector = f"involvedObject.name={name}"
    response = client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=selector, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
    )
    items: list[dict[str, Any]] = json.loads(response.data).get("items") or []
    wanted = {*(detectors() if kinds is None else kinds), *custom}
    return [i for i in items if (i.get("involvedObject") or {}).get("kind") in wanted]


def _time(value: Any) -> float | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
