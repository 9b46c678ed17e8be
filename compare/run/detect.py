"""Time-to-detect: when the operator announced a correction with an Event on the WebApp.

The operator posts `DriftCorrected` (an existing child changed back) or `Created` (a child
recreated) on every correction. The first such Event after the injection is the detection;
its `eventTime` (microseconds, stamped by the operator on this machine's clock) gives the
time. Events with second-precision timestamps only cannot time a sub-second detection, so they
name the detector without a time. Helm posts nothing: detection is not observable there.
Flux's helm-controller posts `DriftDetected` on the HelmRelease (named after the WebApp) when a
reconcile finds drift, before it corrects it; its Events carry whole seconds only.

A target's operator manages a custom resource of its own kind and posts its own reasons: on a
kind the toolkit does not know (`custom`), the first Event of any reason the operator posts on
the resource after the injection is the detection - the operator reacted to the fault.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client

from compare.judge import REQUEST_TIMEOUT
from compare.webapp import KIND

REASONS = ("DriftCorrected", "Created")
# The Events that announce a correction, per kind of the object they are posted on.
DETECTORS: dict[str, tuple[str, ...]] = {KIND: REASONS, "HelmRelease": ("DriftDetected",)}


@dataclass(frozen=True)
class Detection:
    reason: str
    at: float | None  # time.time() seconds; None without a precise timestamp

    @property
    def detected_by(self) -> str:
        return f"Event {self.reason}"


def first_detection(
    events: list[dict[str, Any]], since: float, custom: Sequence[str] = ()
) -> Detection | None:
    """The earliest correction Event stamped at or after `since` (pure, for tests): a known
    correction reason on a known kind, or any reason on one of the `custom` kinds."""
    found: list[tuple[float, Detection]] = []
    for event in events:
        reason = event.get("reason")
        kind = (event.get("involvedObject") or {}).get("kind", KIND)
        if reason not in DETECTORS.get(kind, ()) and (kind not in custom or not reason):
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
    api: client.ApiClient, namespace: str, name: str, custom: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """The Events on the WebApp, on the HelmRelease named after it, or on a custom resource
    of one of the `custom` kinds of that name."""
    selector = f"involvedObject.name={name}"
    response = client.CoreV1Api(api).list_namespaced_event(
        namespace, field_selector=selector, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
    )
    items: list[dict[str, Any]] = json.loads(response.data).get("items") or []
    kinds = {*DETECTORS, *custom}
    return [i for i in items if (i.get("involvedObject") or {}).get("kind") in kinds]


def _time(value: Any) -> float | None:
    if not value:
        return None
    parsed = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.timestamp()
