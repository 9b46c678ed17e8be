"""Which of an app's objects are its main parts: the workload and the Service the faults act on
and whose pods the judge counts. One rule (`main_parts`), over any manifest, used by the
planning (`compare.run.workload`) and the judge (`DesiredObjects.workload` and `.service`).

Without names, the main Service decides:

- the **main Service** routes to the app's own pods: a Service with a selector, not headless
  (`clusterIP: None`), not `ExternalName`, whose selector a workload's pod template labels
  hold. Several: the first by exposure (`LoadBalancer`, `NodePort`, `ClusterIP`), then the
  shortest name (an auxiliary Service is usually the main one's name with a suffix:
  `-metrics`, `-admission`), then the name;
- the **main workload** is the one whose pods the main Service selects. Several: the one whose
  containers expose a port the Service targets, then the table's order of workload kinds
  (`compare.judge.kinds.WORKLOAD_KINDS`), then the name.

Without such a Service: the first workload in the table's order of kinds (manifest order
within a kind), and the first Service that is not headless, else the first Service.

Named parts (a target file's `parts`) win: a named workload's Service is the main one among
those that select its pods (else as without one); a named Service's workload is the one it
selects. A name the objects do not hold is `PartNotFound`, naming the key.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from compare.judge.kinds import WORKLOAD_KINDS, pod_template

Obj = Mapping[str, Any]
# The order Service types are preferred in as the main one: the most exposed first.
EXPOSURE = ("LoadBalancer", "NodePort", "ClusterIP")
WORKLOAD_KEY, SERVICE_KEY = "parts.workload", "parts.service"


class PartNotFound(ValueError):
    """A named part the objects do not hold: `key` the target file's field, `text` why."""

    def __init__(self, key: str, text: str) -> None:
        super().__init__(f"{key}: {text}")
        self.key, self.text = key, text


def _name(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def routes(service: Obj) -> bool:
    """Whether the Service routes to pods by its selector through a cluster IP: a selector,
    neither headless nor ExternalName."""
    spec = _spec(service)
    return (
        bool(spec.get("selector"))
        and spec.get("clusterIP") != "None"
        and spec.get("type") != "ExternalName"
    )


def selects(service: Obj, workload: Obj) -> bool:
    """Whether the Service's selector matches the workload's pod template labels."""
    selector = _spec(service).get("selector") or {}
    labels = ((pod_template(workload) or {}).get("metadata") or {}).get("labels") or {}
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _serves_port(service: Obj, workload: Obj) -> bool:
    """Whether a container of the workload exposes a port the Service targets (by name or
    number; a port without targetPort targets its own number)."""
    targets = {str(p.get("targetPort", p.get("port"))) for p in _spec(service).get("ports") or []}
    containers = ((pod_template(workload) or {}).get("spec") or {}).get("containers") or []
    exposed = {
        str(value)
        for c in containers
        for p in c.get("ports") or []
        for value in (p.get("name"), p.get("containerPort"))
        if value is not None
    }
    return bool(targets & exposed)


def _kind_rank(obj: Obj) -> int:
    return WORKLOAD_KINDS.index(str(obj.get("kind")))


def _service_order(service: Obj) -> tuple[int, int, str]:
    kind = str(_spec(service).get("type") or "ClusterIP")
    exposure = EXPOSURE.index(kind) if kind in EXPOSURE else len(EXPOSURE)
    return exposure, len(_name(service)), _name(service)


def _workload_order(service: Obj | None) -> Any:
    def order(workload: Obj) -> tuple[bool, int, str]:
        served = service is not None and _serves_port(service, workload)
        return not served, _kind_rank(workload), _name(workload)

    return order


def _named_workload(workloads: Sequence[Obj], names: Sequence[str], source: str) -> Obj:
    for given in names:
        kind, _, name = given.rpartition("/")
        found = [w for w in workloads if _name(w) == name and kind in ("", w.get("kind"))]
        if len(found) > 1:
            both = " and ".join(f"{w.get('kind')}/{name}" for w in found)
            raise PartNotFound(WORKLOAD_KEY, f"{given} names {both} in {source}: give Kind/name")
        if found:
            return found[0]
    held = ", ".join(f"{w.get('kind')}/{_name(w)}" for w in workloads) or "none"
    raise PartNotFound(WORKLOAD_KEY, f"{names[0]} is not in {source} (its workloads: {held})")


def _named_service(services: Sequence[Obj], names: Sequence[str], source: str) -> Obj:
    for given in names:
        found = next((s for s in services if _name(s) == given), None)
        if found is not None:
            return found
    held = ", ".join(_name(s) for s in services) or "none"
    raise PartNotFound(SERVICE_KEY, f"{names[0]} is not in {source} (its Services: {held})")


def main_parts(
    objects: Sequence[Obj],
    *,
    workload: Sequence[str] = (),
    service: Sequence[str] = (),
    source: str = "the app's manifest",
) -> tuple[Obj | None, Obj | None]:
    """The app's main workload and main Service among `objects` (the app's own, in manifest
    order; None: it has none), by the module's rule. `workload` and `service`: the names given
    for them, each a list of spellings tried in order (`Kind/name` or `name`; a trial's release
    renames a chart's objects); empty: the rule decides. `source` names the objects in a
    `PartNotFound`."""
    workloads = [o for kind in WORKLOAD_KINDS for o in objects if o.get("kind") == kind]
    services = [o for o in objects if o.get("kind") == "Service"]
    chosen_workload = _named_workload(workloads, workload, source) if workload else None
    chosen_service = _named_service(services, service, source) if service else None
    if chosen_service is None:
        candidates = [
            s
            for s in services
            if routes(s)
            and (
                any(selects(s, w) for w in workloads)
                if chosen_workload is None
                else selects(s, chosen_workload)
            )
        ]
        if candidates:
            chosen_service = min(candidates, key=_service_order)
    if chosen_workload is None and chosen_service is not None:
        selected = [w for w in workloads if selects(chosen_service, w)]
        if selected:
            chosen_workload = min(selected, key=_workload_order(chosen_service))
    if chosen_workload is None and workloads:
        chosen_workload = workloads[0]
    if chosen_service is None and services:
        chosen_service = next((s for s in services if routes(s)), services[0])
    return chosen_workload, chosen_service
