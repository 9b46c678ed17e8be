"""What the faults act on: the app's parts (its workload, pods, Service, ConfigMap, ...), taken
from its objects.

The built-in experiments name what they break through configuration variables, never through
the WebApp's own names: `webapp_workload` and `webapp_workload_kind` (the workload and its kind
as a field-path root: `deployment`, `statefulset`, `daemonset`), `webapp_pod_selector` (its
pods, a label selector), `webapp_container` (the container a pod-template fault changes),
`webapp_service` and `webapp_service_port` (the Service and the port a port fault changes),
`webapp_configmap`, `webapp_secret`, `webapp_rbac_binding` and `webapp_rbac_binding_kind`.
They are derived from the app's manifest (the built-in WebApp's: its chart rendered, which
gives the names the experiments always used; a target file's: its chart's, or, operator arm,
the objects its custom resources own: the baseline): the workload and the Service are the
app's main ones, or the ones its target file names (`parts`), by one rule
(`compare.judge.parts.main_parts`, which the judge reading the trial uses too); the
workload's `spec.selector.matchLabels` and first container, the Service's first port (by
name, else by index), and, in manifest order, the first ConfigMap, Secret and RoleBinding
(else ClusterRoleBinding) of the app's namespace (an object the chart puts in another one, a
RoleBinding in `kube-system`, is never taken: the faults act in the trial's namespace).

An experiment needs the parts whose variables its activities use, and applies to the kinds its
`compare` block lists (`kinds`; without it, a Deployment for the workload, as the WebApp's).
An app without such a part, or whose part is of another kind, leaves the experiment out of the
run with the reason (`unmet`), never an error.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compare.judge.kinds import WORKLOAD_KINDS, pod_template
from compare.judge.parts import main_parts

WORKLOAD_KIND = "Deployment"  # the WebApp's, and what an experiment without `kinds` acts on
# Where an operator target's parts come from (the reason an experiment is left out).
OWNED = "the operator's baseline of owned objects"


@dataclass(frozen=True)
class Part:
    """One part of an app an experiment may act on."""

    name: str
    variables: tuple[str, ...]  # the configuration variables that name it
    kinds: tuple[str, ...]  # the kinds it may be, in the order the app's manifest is searched
    default_kinds: tuple[str, ...]  # what an experiment without `kinds` accepts


PARTS: dict[str, Part] = {
    p.name: p
    for p in (
        Part(
            "workload",
            ("webapp_workload", "webapp_workload_kind", "webapp_pod_selector", "webapp_container"),
            WORKLOAD_KINDS,
            (WORKLOAD_KIND,),
        ),
        Part("service", ("webapp_service", "webapp_service_port"), ("Service",), ("Service",)),
        Part("configmap", ("webapp_configmap",), ("ConfigMap",), ("ConfigMap",)),
        Part("secret", ("webapp_secret",), ("Secret",), ("Secret",)),
        Part(
            "rbac-binding",
            ("webapp_rbac_binding", "webapp_rbac_binding_kind"),
            ("RoleBinding", "ClusterRoleBinding"),
            ("RoleBinding", "ClusterRoleBinding"),
        ),
    )
}
NEEDS = tuple(PARTS)


@dataclass(frozen=True)
class Ref:
    kind: str
    name: str


@dataclass(frozen=True)
class Workload:
    """The parts of an app the built-in faults act on (None: the app has no such part)."""

    kind: str
    name: str | None  # the workload (of `kind`)
    pod_selector: Mapping[str, str]
    container: str | None
    service: str | None
    service_port: str | None = None  # the Service's first port: its name, else its index
    others: Mapping[str, Ref] = field(default_factory=dict)  # configmap, secret, rbac-binding
    # The app's parts as rendered, by field-path root (`statefulset`, `service`, ...): what
    # an experiment's `requires-field` is read from (empty: it is not checked).
    objects: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    # Where the parts were taken from, for the reason an experiment is left out.
    source: str = "the app's manifest"

    def ref(self, need: str) -> Ref | None:
        if need == "workload":
            return None if self.name is None else Ref(self.kind, self.name)
        if need == "service":
            return None if self.service is None else Ref("Service", self.service)
        return self.others.get(need)

    def configuration(self) -> dict[str, str]:
        """The experiment's configuration values (as `chaos run --var`); "" where absent."""
        configmap, secret = self.ref("configmap"), self.ref("secret")
        binding = self.ref("rbac-binding")
        return {
            "webapp_workload": self.name or "",
            "webapp_workload_kind": self.kind.lower(),
            "webapp_pod_selector": ",".join(f"{k}={v}" for k, v in self.pod_selector.items()),
            "webapp_container": self.container or "",
            "webapp_service": self.service or "",
            "webapp_service_port": self.service_port or "",
            "webapp_configmap": configmap.name if configmap else "",
            "webapp_secret": secret.name if secret else "",
            "webapp_rbac_binding": binding.name if binding else "",
            "webapp_rbac_binding_kind": (binding.kind if binding else "RoleBinding").lower(),
        }


def app_configuration(workload: Workload, name: str, namespace: str) -> dict[str, str]:
    """What a fault's activities are told about the app in a trial: its name, its namespace
    and its parts (`Workload.configuration`)."""
    return {"webapp_namespace": namespace, "webapp_name": name, **workload.configuration()}


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _first(
    objects: Sequence[Mapping[str, Any]], kinds: Sequence[str], home: frozenset[str] = frozenset()
) -> Mapping[str, Any] | None:
    """The first object of the first kind (in `kinds`' order) the manifest has in the app's
    namespace: none named, or one of `home` (the faults act in the trial's namespace; a
    chart's RoleBinding in `kube-system` is not there)."""
    for wanted in kinds:
        found = next(
            (
                o
                for o in objects
                if o.get("kind") == wanted
                and ((o.get("metadata") or {}).get("namespace") or "") in home | {""}
            ),
            None,
        )
        if found is not None:
            return found
    return None


def workload_of(
    objects: Sequence[Mapping[str, Any]],
    *,
    source: str = "the app's manifest",
    workload_names: Sequence[str] = (),
    service_names: Sequence[str] = (),
) -> Workload:
    """An app's parts from its manifest, or from an operator's baseline of owned objects (see
    the module docstring); `workload_names` and `service_names`: the spellings of the parts
    the target file names (a name not there: `compare.judge.parts.PartNotFound`)."""
    workload, service = main_parts(
        objects, workload=workload_names, service=service_names, source=source
    )
    name = container = None
    selector: dict[str, str] = {}
    if workload is not None:
        name = _name(workload)
        spec = workload.get("spec") or {}
        selector = {
            str(k): str(v)
            for k, v in ((spec.get("selector") or {}).get("matchLabels") or {}).items()
        }
        containers = ((pod_template(workload) or {}).get("spec") or {}).get("containers") or []
        if containers:
            container = str(containers[0].get("name"))
    port = None
    if service is not None:
        ports = (service.get("spec") or {}).get("ports") or []
        if ports:
            port = str(ports[0].get("name") or 0)
    others = {}
    rendered: dict[str, Mapping[str, Any]] = {}
    for obj in reversed(objects):  # the first of each kind wins its root ...
        rendered[str(obj.get("kind")).lower()] = obj
    for main in (workload, service):  # ... but the main parts win theirs
        if main is not None:
            rendered[str(main.get("kind")).lower()] = main
    # The namespace the app's main parts name, when the chart names one (its release's).
    home = frozenset(
        str((main.get("metadata") or {}).get("namespace"))
        for main in (workload, service)
        if main is not None and (main.get("metadata") or {}).get("namespace")
    )
    for need in ("configmap", "secret", "rbac-binding"):
        found = _first(objects, PARTS[need].kinds, home)
        if found is not None:
            others[need] = Ref(str(found.get("kind")), _name(found))
    return Workload(
        kind=str(workload.get("kind")) if workload is not None else WORKLOAD_KIND,
        name=name,
        pod_selector=selector,
        container=container,
        service=None if service is None else _name(service),
        service_port=port,
        others=others,
        objects=rendered,
        source=source,
    )


def needs_of(document: Mapping[str, Any]) -> tuple[str, ...]:
    """What an experiment's activities act on: the parts whose variables they use."""
    text = json.dumps(
        [document.get(key) for key in ("steady-state-hypothesis", "method", "rollbacks")]
    )
    found = {p.name for p in PARTS.values() for var in p.variables if "${" + var + "}" in text}
    return tuple(n for n in NEEDS if n in found)


def accepted(need: str, kinds: Sequence[str]) -> tuple[str, ...]:
    """The kinds an experiment listing `kinds` accepts for the part `need`."""
    part = PARTS[need]
    return tuple(k for k in kinds if k in part.kinds) or part.default_kinds


def unmet(needs: Sequence[str], workload: Workload, kinds: Sequence[str] = ()) -> str | None:
    """Why an experiment that acts on `needs`, of `kinds`, cannot run against this app
    (None: it can)."""
    for need in needs:
        wanted = accepted(need, kinds)
        ref = workload.ref(need)
        if ref is None:
            return f"needs a {_either(wanted)} ({workload.source} has none)"
        if ref.kind not in wanted:
            return f"applies to a {_either(wanted)} only (the app's is {ref.kind} {ref.name})"
    return None


def _either(kinds: Sequence[str]) -> str:
    return kinds[0] if len(kinds) == 1 else f"{', '.join(kinds[:-1])} or {kinds[-1]}"
