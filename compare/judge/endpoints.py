"""EndpointSlices someone else added for the app's Services: drift, as foreign pods are.

A Service routes to the addresses of every EndpointSlice labelled with its name
(`kubernetes.io/service-name`), not only to those of the pods it selects. The EndpointSlice
controller writes the slices of a Service with a selector (and the mirroring controller those
of a selectorless Service's Endpoints); each labels its own with
`endpointslice.kubernetes.io/managed-by`. A slice for a desired Service that neither manages,
and that is no desired object itself, sends the Service's traffic somewhere the desired state
does not say: drift, like a pod the workload's selector matches that it does not own
(`compare.judge.rollout.foreign_pods`). Nothing but its removal heals it.
"""

from __future__ import annotations

from typing import Any

from compare.judge.desired import DesiredObjects
from compare.judge.reading import Reading

Obj = dict[str, Any]

KIND = "EndpointSlice"
SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
# The managers of a Service's own slices: the EndpointSlice controller (a Service with a
# selector) and the mirroring controller (the Endpoints of a Service without one).
SYSTEM_MANAGERS = ("endpointslice-controller.k8s.io", "endpointslicemirroring-controller.k8s.io")


def _labels(obj: Obj) -> dict[str, str]:
    return (obj.get("metadata") or {}).get("labels") or {}


def foreign_slices(desired: DesiredObjects, reading: Reading) -> dict[str, list[Obj]]:
    """Root of each desired Service -> the slices for it that are neither its controllers'
    nor desired (sorted by name; Services without any are left out)."""
    own = {item.name for item in desired.of_kind(KIND)}
    slices = sorted(
        reading.all(KIND), key=lambda s: str((s.get("metadata") or {}).get("name") or "")
    )
    found: dict[str, list[Obj]] = {}
    for item in desired.of_kind("Service"):
        foreign = [
            s
            for s in slices
            if _labels(s).get(SERVICE_NAME) == item.name
            and _labels(s).get(MANAGED_BY) not in SYSTEM_MANAGERS
            and (s.get("metadata") or {}).get("name") not in own
        ]
        if foreign:
            found[item.root] = foreign
    return found


def addresses(endpoint_slice: Obj) -> list[str]:
    """Every address the slice routes to."""
    return [
        str(address)
        for endpoint in endpoint_slice.get("endpoints") or []
        for address in endpoint.get("addresses") or []
    ]


def slice_problems(desired: DesiredObjects, reading: Reading) -> list[str]:
    """One problem per foreign slice of a desired Service."""
    return [
        f"{root}: EndpointSlice {(s.get('metadata') or {}).get('name')} routes it to"
        f" {', '.join(addresses(s)) or 'no address'} but is not its controller's"
        f" (managed-by: {_labels(s).get(MANAGED_BY) or 'none'})"
        for root, found in foreign_slices(desired, reading).items()
        for s in found
    ]
