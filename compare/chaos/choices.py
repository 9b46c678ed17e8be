"""What a pod-template fault writes, chosen from what the live workload has.

A fault acts on what the app has. Where the field it drifts is absent, it sets or adds it: an
absent CPU request is set, an absent readiness probe is added, an absent pod-template label is
added (the judge is closed-world: a field the desired object lacks is as much drift as a
changed one). Where the field is present, it gets a value other than its own: a patch writing
the value already there would inject nothing. A fault that takes a field away (`probe-remove`)
has nothing to act on where the field is absent: its experiment is skipped (`requires-field`).

Pure functions over API JSON (camelCase), unit-tested; the actions (`compare.chaos.actions`)
read the object, ask here, and patch.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from kubernetes.utils.quantity import parse_quantity

CPU_REQUEST = "250m"
# Tried in order after the asked-for request when that is the container's own value or above
# its CPU limit (the API server refuses a request above the limit).
CPU_FALLBACKS = ("100m", "10m", "1m")
PROBE_PERIOD_S = 30
PROBE_PERIOD_DEFAULT_S = 10  # what the API server stores when a probe gives none
# An added probe's check when the container has no port to check.
PROBE_COMMAND = ("true",)
LABEL_SUFFIX = "-other"


class NoChoice(ValueError):
    """Nothing the fault could write differs from what the object has."""


def _quantity(value: Any) -> Decimal:
    return Decimal(parse_quantity(value))


def cpu_request(container: Mapping[str, Any], wanted: str = CPU_REQUEST) -> str:
    """The CPU request to write to `container`: `wanted`, else the first fallback that is
    neither the container's own request nor above its CPU limit. A container with no request
    gets one (set, not changed)."""
    resources = container.get("resources") or {}
    current = (resources.get("requests") or {}).get("cpu")
    limit = (resources.get("limits") or {}).get("cpu")
    for candidate in dict.fromkeys((str(wanted), *CPU_FALLBACKS)):
        if current is not None and _quantity(candidate) == _quantity(current):
            continue
        if limit is not None and _quantity(candidate) > _quantity(limit):
            continue
        return candidate
    raise NoChoice(
        f"no CPU request to set: {current!r} is the container's, the others are above its"
        f" limit {limit!r}"
    )


def readiness_probe(container: Mapping[str, Any], period: int = PROBE_PERIOD_S) -> dict[str, Any]:
    """What to merge into `container`'s readinessProbe (a strategic merge).

    A container with a readiness probe gets its `periodSeconds` changed to `period` (half of
    it when that is the probe's own). One without gets a probe added, with that period: a TCP
    check of its first port (by name, else number), else (no port) an exec of `true`.
    """
    probe = container.get("readinessProbe")
    if probe:
        current = int(probe.get("periodSeconds") or PROBE_PERIOD_DEFAULT_S)
        return {"periodSeconds": period if current != period else max(1, period // 2)}
    ports = container.get("ports") or []
    handler: dict[str, Any]
    if ports:
        first = ports[0]
        handler = {"tcpSocket": {"port": first.get("name") or first.get("containerPort")}}
    else:
        handler = {"exec": {"command": list(PROBE_COMMAND)}}
    return {**handler, "periodSeconds": period}


def label_value(labels: Mapping[str, Any] | None, key: str, wanted: str) -> str:
    """The value to give label `key`: `wanted`, or (the label has it already) `wanted` with a
    suffix. A template without the label gets it added."""
    current = (labels or {}).get(key)
    return wanted if current != wanted else f"{wanted}{LABEL_SUFFIX}"
