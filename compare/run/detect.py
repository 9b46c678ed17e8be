"""Time-to-detect: when an approach announced a correction with an Event.

Each approach says which Events announce its corrections (`Approach.detector`: reasons per
kind of the object they are posted on; none for plain Helm, where detection is not
observable). The first such Event after the injection is the detection; its `eventTime`
(microseconds, stamped on this machine's clock) gives the time. Events with second-precision
timestamps only cannot time a sub-second detection, so they name the detector without a time.

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
from compare.webapp import KIND

Kinds = Mapping[str, tuple[str, ...]]
# The Events that announce a correction, per kind of the object they are posted on, of every
# registered approach (what a caller that names no approach's detector looks for).
DETECTORS: dict[str, tuple[str, ...]] = {
    kind: reasons
    for approach in REGISTRY
    if (detector := approach.detector()) is not None
    for kind, reasons in detector.kinds.items()
}


@dataclass(frozen=True)
class Detection:
    reason: str
    at: float | None  # time.time() seconds; None without a precise timestamp

    @property
    def detected_by(self) -> str:
        return f"Event {self.reason}"


def first_detection(
    events: list[dict[str, Any]],
    since: float,
    custom: Sequence[str] = (),
    kinds: Kinds | None = None,
) -> Detection | None:
    """The earliest correction Event stamped at or after `since` (pure, for tests): a known
    correction reason on a known kind, or any reason on one of the `custom` kinds."""
    kinds = DETECTORS if kinds is None else kinds
    found: list[tuple[float, Detection]] = []
    for event in events:
        reason = event.get("reason")
        kind = (event.get("involvedObject") or {}).get("kind", KIND)
        if reason not in kinds.get(kind, ()) and (kind not in custom or not reason):
            continue
        precise = _time(event.get("eventTime"))
        if precise is not None:
            if precise >= since:
                found.append((precise, Detection(str(reason), precise)))
            continue
        coarse = _time(event.get("lastTimestamp") or event.get("firstTimestamp"))
        # Whole seconds: only the second of the injection or later can be a correction of it.
        if coarse is not None and coarse >= int(since):
            found.append((coarse, Detection(str(reason), None)))
    return min(found, key=lambda item: item[0])[1] if found else None


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
    wanted = {*(DETECTORS if kinds is None else kinds), *custom}
    return [i for i in items if (i.get("involvedObject") or {}).get("kind") in wanted]


def _time(value: Any) -> float | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
