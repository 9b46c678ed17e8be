"""An operator's desired state: every object its custom resources own, snapshotted once ready.

An operator's children are not known in advance (unlike a chart's manifest): once the custom
resource reports ready, every object it owns - transitively, by ownerReferences - is read from
the live cluster and kept as the baseline the closed-world judge holds them to, for any kind
the judge knows (`compare.judge.kinds`). What is not the operator's desired state is left out:

- ReplicaSets and Pods, and anything a workload owns: rollout by-products, judged through the
  Deployment's rollout rule (`compare.judge.rollout`), as for a chart;
- identity and status (uid, resourceVersion, ownerReferences, timestamps, status);
- annotations controllers write on their own (`deployment.kubernetes.io/revision`, ...);
- in the judge's raw form, fields the API server allocates (a Service's clusterIP, nodePorts):
  a Service the operator recreates gets new ones, and that is no drift.

The baseline is stored in the app's namespace as a Secret (`compare-baseline-<target>`), so
any later command - `compare status`, a trial's chaostoolkit probes, another machine - judges
against the same snapshot. It holds a Secret's values only as their hashes
(`compare.judge.secrets`), as every reading does.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kubernetes import client

from compare.approaches.operator.managers import made_by_kubernetes, uid
from compare.errors import EXIT_FAILED, CompareError
from compare.judge import DesiredObjects, from_pairs
from compare.judge.kinds import KINDS, POD_MAKERS
from compare.judge.reading import list_raw

VERSION = 1
DATA_KEY = "baseline.json"
MANAGED_BY = "compare"
BASELINE_LABEL = "compare.example.com/baseline-of"
# Rollout by-products: never desired objects themselves (see the module docstring).
BY_PRODUCTS = ("ReplicaSet", "Pod")
# Workloads own only by-products (ReplicaSets, Pods, ControllerRevisions, a CronJob's Jobs).
WORKLOADS = tuple(name for name in POD_MAKERS if name not in BY_PRODUCTS)
WALKED = tuple(name for name, row in KINDS.items() if row.namespaced and name not in BY_PRODUCTS)
# Annotations the API server or a controller writes, whoever owns the object: a heal moves
# them on (a restored template is a new revision), so they are not the operator's state.
CONTROLLER_ANNOTATIONS = (
    "deployment.kubernetes.io/revision",
    "deprecated.daemonset.template.generation",
)
CONTROLLER_ANNOTATION_PREFIXES = ("pv.kubernetes.io/", "volume.kubernetes.io/")
KIND_ORDER = {name: index for index, name in enumerate(KINDS)}


def baseline_name(target_name: str) -> str:
    return f"compare-baseline-{target_name}"


def owned_objects(
    api: client.ApiClient, namespace: str, owners: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """Every object the owners own, transitively (not through workloads), as read live; what
    Kubernetes' own controllers made for them (a Service's EndpointSlices) is no desired
    object (`managers.made_by_kubernetes`)."""
    objects = []
    for kind_name in WALKED:
        try:
            listing = list_raw(api, namespace, kind_name)
        except client.ApiException as exc:
            if exc.status == 404:  # a kind this API server does not serve: nothing owned
                continue
            raise
        # A list's items carry neither kind nor apiVersion: the list does.
        for item in listing.get("items") or []:
            objects.append({**item, "apiVersion": listing.get("apiVersion"), "kind": kind_name})
    frontier = {uid(owner) for owner in owners} - {""}
    seen: set[str] = set()
    found: list[dict[str, Any]] = []
    while frontier:
        children = [
            obj
            for obj in objects
            if uid(obj) not in seen
            and not made_by_kubernetes(obj)
            and any(
                ref.get("uid") in frontier
                for ref in (obj.get("metadata") or {}).get("ownerReferences") or []
            )
        ]
        seen.update(uid(obj) for obj in children)
        found.extend(children)
        frontier = {uid(obj) for obj in children if obj.get("kind") not in WORKLOADS}
    return sorted(found, key=lambda o: (KIND_ORDER[o["kind"]], o["metadata"]["name"]))


def cleaned(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The object as desired state: no identity, status or controller annotations."""
    meta = obj.get("metadata") or {}
    annotations = {
        key: value
        for key, value in (meta.get("annotations") or {}).items()
        if key not in CONTROLLER_ANNOTATIONS and not key.startswith(CONTROLLER_ANNOTATION_PREFIXES)
    }
    out: dict[str, Any] = {
        "apiVersion": obj.get("apiVersion"),
        "kind": obj.get("kind"),
        "metadata": {
            "name": meta.get("name"),
            **({"labels": dict(meta["labels"])} if meta.get("labels") else {}),
            **({"annotations": annotations} if annotations else {}),
        },
    }
    for key, value in obj.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    return out


def unallocated(obj: Mapping[str, Any]) -> dict[str, Any]:
    """The raw form the judge reads allocated fields from: a Service's clusterIP(s), node
    ports and health-check port left unset (never judged), a headless `None` kept."""
    if obj.get("kind") != "Service":
        return dict(obj)
    spec = dict(obj.get("spec") or {})
    if spec.get("clusterIP") != "None":
        spec.pop("clusterIP", None)
        spec.pop("clusterIPs", None)
    spec.pop("healthCheckNodePort", None)
    spec["ports"] = [
        {k: v for k, v in port.items() if k != "nodePort"} for port in spec.get("ports") or []
    ]
    return {**obj, "spec": spec}


def desired_of(objects: Sequence[Mapping[str, Any]]) -> DesiredObjects:
    """The judge's desired objects of a baseline: the snapshot is what the API server stored,
    so it is its own defaulted form; allocated fields are left out of the raw one."""
    return from_pairs([(unallocated(obj), obj) for obj in objects])


def save(
    api: client.ApiClient,
    namespace: str,
    target_name: str,
    owners: Sequence[Mapping[str, Any]],
    objects: Sequence[Mapping[str, Any]],
) -> None:
    """Store the baseline as the namespace's Secret for this target (replacing any earlier)."""
    data = {
        "version": VERSION,
        "target": target_name,
        "resources": [
            {
                "apiVersion": o.get("apiVersion"),
                "kind": o.get("kind"),
                "name": o["metadata"]["name"],
                "uid": uid(o),
            }
            for o in owners
        ],
        "objects": list(objects),
    }
    encoded = base64.b64encode(json.dumps(data, sort_keys=True).encode()).decode("ascii")
    body = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": baseline_name(target_name),
            "labels": {"app.kubernetes.io/managed-by": MANAGED_BY, BASELINE_LABEL: target_name},
        },
        "type": "Opaque",
        "data": {DATA_KEY: encoded},
    }
    core = client.CoreV1Api(api)
    try:
        core.replace_namespaced_secret(baseline_name(target_name), namespace, body)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        core.create_namespaced_secret(namespace, body)


def load(api: client.ApiClient, namespace: str, target_name: str) -> list[dict[str, Any]] | None:
    """The stored baseline objects (None: no baseline in this namespace)."""
    try:
        secret = client.CoreV1Api(api).read_namespaced_secret(baseline_name(target_name), namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    try:
        data = json.loads(base64.b64decode((secret.data or {})[DATA_KEY]))
        if data.get("version") != VERSION:
            raise ValueError(f"version {data.get('version')!r}")
        objects: list[dict[str, Any]] = data["objects"]
    except (KeyError, ValueError, TypeError) as exc:
        raise CompareError(
            f"the baseline Secret {namespace}/{baseline_name(target_name)} is unreadable ({exc})",
            exit_code=EXIT_FAILED,
        ) from None
    return objects


def load_desired(api: client.ApiClient, namespace: str, target_name: str) -> DesiredObjects:
    """The stored baseline as the judge's desired objects; a one-line error without one."""
    objects = load(api, namespace, target_name)
    if objects is None:
        raise CompareError(
            f"no baseline of target {target_name} in namespace {namespace}: deploy it first"
            " (`compare deploy operator --target FILE`)",
            exit_code=EXIT_FAILED,
        )
    return desired_of(objects)


def delete(api: client.ApiClient, namespace: str, target_name: str) -> None:
    try:
        client.CoreV1Api(api).delete_namespaced_secret(baseline_name(target_name), namespace)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
