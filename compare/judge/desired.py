"""The desired objects of a deployment, made comparable with live ones by the API server itself.

The input is the complete objects a deployer applies (a chart's rendered manifest, an
operator's built children), never a list of chosen fields. To compare them closed-world with
live objects they need the API's defaults (strategy, probes' thresholds, imagePullPolicy,
terminationMessagePath, ...): a server-side dry-run create returns exactly what the API server
would store, so no hand-written normaliser can drift from the real defaulting.

Any kind the API server serves is defaulted so (a chart's custom resources, an `APIService`):
its kind is found by discovery (`compare.judge.kinds.resolve`); a custom resource whose
CustomResourceDefinition is on the cluster but not Established yet waits for it (bounded). A
kind that fixes its objects' names (an APIService is `version.group`) is dry-run under the
object's own name, and once it exists by the API server's server-side apply dry-run onto it,
less the fields other field managers own alone (`compare.kube.managed`).
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from kubernetes import client

from compare.errors import CompareError
from compare.judge.kinds import (
    KINDS,
    NODES,
    REQUEST_TIMEOUT,
    REVISIONS,
    Kind,
    in_table,
    kind,
    qualified,
    resolve,
    scoped,
    watched_with,
)
from compare.judge.parts import PartNotFound, main_parts
from compare.judge.rest import request
from compare.judge.secrets import hashed_secret
from compare.judge.workloads import carries_own_uid, hpa_ranges, replaced_value
from compare.kube.apierror import status_message
from compare.kube.managed import without_foreign
from compare.kube.served import wait_established
from compare.kube.wait import wait_until_gone

DRY_RUN_PREFIX = "judge-"
# The field manager of the judge's server-side apply dry-runs (nothing is stored under it).
DRY_RUN_MANAGER = "compare-judge"
# How long a custom resource's kind may take to be served once its CRD is on the cluster.
CRD_WAIT_S = 30.0
_CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@dataclass(frozen=True)
class DesiredObject:
    kind: str
    name: str
    root: str  # how paths name it: `deployment`, or `deployment/<name>` when several
    raw: Mapping[str, Any]  # as the deployer applies it
    defaulted: Mapping[str, Any]  # with the API's defaults
    # The dry-run named its own UID in the object (a Job's generated selector): compared with
    # the live object's UID in its place (`compare.judge.workloads.as_own`).
    own_uid: bool = False
    # The namespace it lives in when that is not the one it is judged in (a chart's
    # RoleBinding in kube-system): judged as an object, never as the app's workload or parts.
    namespace: str | None = None
    # A kind outside the table of kinds: the qualified name a reading holds it under
    # (`Widget.v1.example.com`, `compare.judge.kinds.qualified`).
    qualified: str | None = None

    @property
    def key(self) -> str:
        """The kind a reading holds it under (`Kind@namespace` outside the reading's own)."""
        return scoped(self.qualified or self.kind, self.namespace)


@dataclass(frozen=True)
class DesiredObjects:
    """Everything one deployment must keep, in the deployer's order. `parts`: the names given
    for its main workload and Service (`compare.judge.parts.main_parts`: each a list of
    spellings; empty, the rule decides)."""

    items: tuple[DesiredObject, ...]
    parts: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())

    def with_parts(self, workload: Sequence[str], service: Sequence[str]) -> DesiredObjects:
        """The same objects, their main parts the named ones (`main_parts`)."""
        return replace(self, parts=(tuple(workload), tuple(service)))

    @functools.cached_property
    def main(self) -> tuple[DesiredObject | None, DesiredObject | None]:
        """Its main workload and Service among its own objects (`main_parts`); names it
        does not hold (never the case once a run has checked them) leave the rule to decide."""
        # A kind of another group that shares a table kind's name (a Knative `Service`) is
        # none of the app's parts.
        own = [item for item in self.items if item.namespace is None and item.qualified is None]
        raws = [item.raw for item in own]
        try:
            found = main_parts(raws, workload=self.parts[0], service=self.parts[1])
        except PartNotFound:
            found = main_parts(raws)
        by_id = {id(item.raw): item for item in own}
        workload, service = (None if obj is None else by_id[id(obj)] for obj in found)
        return workload, service

    @property
    def kinds(self) -> tuple[str, ...]:
        """What to read to judge these objects: the watched kinds plus every desired kind (and
        a StatefulSet's or DaemonSet's ControllerRevisions: its current revision; the nodes,
        which a DaemonSet's pod count is proven against; a Service's EndpointSlices)."""
        sets = any(_rollout(item.kind) == REVISIONS for item in self.items)
        extra = ["ControllerRevision"] if sets else []
        if any(NODES in _rules(item.kind) for item in self.items if item.namespace is None):
            extra.append("Node")
        if self.of_kind("Service"):
            # A Service routes to every slice labelled with its name (`compare.judge.endpoints`).
            extra.append("EndpointSlice")
        return watched_with([*(item.key for item in self.items), *extra])

    @functools.cached_property
    def scaled(self) -> dict[tuple[str, str], tuple[int, int]]:
        """(kind, name) of each workload an HPA of these objects scales -> its replica range
        (made once: the judge asks on every event)."""
        return hpa_ranges(item.raw for item in self.items)

    def of_kind(self, name: str) -> list[DesiredObject]:
        """The objects of that kind in the namespace judged (the app's own); a kind of the
        table's is its own group's (a Knative `Service` is no Service of the app's)."""
        table = name in KINDS
        return [
            item
            for item in self.items
            if item.kind == name and item.namespace is None and (item.qualified is None) == table
        ]

    @property
    def deployment(self) -> DesiredObject | None:
        return next(iter(self.of_kind("Deployment")), None)

    @property
    def workload(self) -> DesiredObject | None:
        """The app's main workload (`compare.judge.parts`): the one its main Service selects,
        or the one named."""
        return self.main[0]

    @property
    def service(self) -> DesiredObject | None:
        """The app's main Service (`compare.judge.parts`), or the one named."""
        return self.main[1]

    def first(self, kind_name: str) -> DesiredObject | None:
        return next(iter(self.of_kind(kind_name)), None)

    @property
    def selector(self) -> dict[str, str]:
        """The workload's matchLabels: which pods are the app's."""
        return {} if self.workload is None else match_labels(self.workload.defaulted)

    @property
    def replicas(self) -> int:
        if self.workload is None or KINDS[self.workload.kind].per_node:
            return 0
        return int((self.workload.defaulted.get("spec") or {}).get("replicas", 1))


def _rollout(kind_name: str) -> str | None:
    row = KINDS.get(kind_name)
    return None if row is None else row.rollout


def _rules(kind_name: str) -> tuple[str, ...]:
    row = KINDS.get(kind_name)
    return () if row is None else row.rules


def match_labels(workload: Mapping[str, Any]) -> dict[str, str]:
    """A workload's `spec.selector.matchLabels`."""
    spec = workload.get("spec") or {}
    return dict((spec.get("selector") or {}).get("matchLabels") or {})


def judged_objects(objects: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The objects of a manifest that persist: Helm hooks (test pods) are not kept."""
    kept = []
    for obj in objects:
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if obj and "helm.sh/hook" not in annotations:
            kept.append(dict(obj))
    return kept


def as_given(objects: Sequence[Mapping[str, Any]]) -> DesiredObjects:
    """Desired objects taken as already defaulted (objects read back from the API server)."""
    return from_pairs([(obj, obj) for obj in judged_objects(objects)])


# The dry-run is deterministic for a cluster, namespace and manifest: a deploy wait, its trial
# and the trial's three chaostoolkit probes share one. Bounded: trial namespaces come and go.
CACHE_SIZE = 256
_defaulted: OrderedDict[tuple[str, str, str], DesiredObjects] = OrderedDict()
_cache_lock = threading.Lock()


def with_api_defaults(
    api: client.ApiClient, namespace: str, objects: Sequence[Mapping[str, Any]]
) -> DesiredObjects:
    """Each object as the API server would store it in `namespace` (server-side dry-run).

    Raises a one-line CompareError when the server rejects one (then it could never hold).
    """
    kept = judged_objects(objects)
    key = (str(api.configuration.host), namespace, json.dumps(kept, sort_keys=True))
    with _cache_lock:
        found = _defaulted.get(key)
        if found is not None:
            _defaulted.move_to_end(key)
            return found
    desired = api_defaults(api, namespace, kept)
    with _cache_lock:
        _defaulted[key] = desired
        while len(_defaulted) > CACHE_SIZE:
            _defaulted.popitem(last=False)
    return desired


def api_defaults(
    api: client.ApiClient,
    namespace: str,
    objects: Sequence[Mapping[str, Any]],
    *,
    api_errors: bool = False,
) -> DesiredObjects:
    """`with_api_defaults` without the shared cache: for callers that keep their own (the
    operator keeps one entry per WebApp, dropped when the WebApp goes). With `api_errors` the
    API server's refusal is raised as its ApiException (a controller tells a 429 from a 403)."""
    kept = judged_objects(objects)
    # Every kind first (a custom resource's CRD Established), then each object's dry-run.
    rows = [served_row(api, obj, kept) for obj in kept]
    pairs = [
        (obj, _dry_run(api, namespace, obj, api_errors, row))
        for obj, row in zip(kept, rows, strict=True)
    ]
    return from_pairs(pairs, home=namespace, rows=rows)


def served_row(
    api: client.ApiClient, obj: Mapping[str, Any], objects: Sequence[Mapping[str, Any]] = ()
) -> Kind:
    """The kind of `obj` as the judge reads it: the table's row, or any kind the API server
    serves (discovery). A custom resource whose CRD is on the cluster waits (bounded) until
    it is Established and served; one no API serves is a one-line error naming it (`objects`:
    the desired set, which may hold its CRD, named then)."""
    kind_name, api_version = str(obj.get("kind")), str(obj.get("apiVersion") or "")
    if in_table(kind_name, api_version):
        return KINDS[kind_name]
    name = qualified(kind_name, api_version)
    what = f"desired {kind_name} {(obj.get('metadata') or {}).get('name')}"
    try:
        return resolve(api, name)
    except ValueError:
        pass
    except CompareError as exc:
        raise CompareError(f"{what}: {exc.message}") from None
    group = api_version.rpartition("/")[0]
    crds = _crds_of(api, group, kind_name)
    if not crds:
        given = [
            str((doc.get("metadata") or {}).get("name"))
            for doc in objects
            if doc.get("kind") == "CustomResourceDefinition" and _defines(doc, group, kind_name)
        ]
        hint = (
            f"its CustomResourceDefinition {given[0]} is not on the cluster yet"
            if given
            else "no CustomResourceDefinition of it is on the cluster"
        )
        raise CompareError(f"{what}: no API serves {api_version} {kind_name} ({hint})")
    # CRDs first: the chart's CRD is there, its kind served once Established (bounded).
    wait_established(api, crds, timeout=CRD_WAIT_S)

    def unserved() -> list[str]:
        try:
            resolve(api, name)
        except ValueError:
            return [name]
        return []

    wait_until_gone(
        unserved,
        deadline=CRD_WAIT_S,
        timed_out=lambda _left: CompareError(
            f"{what}: {api_version} {kind_name} not served {CRD_WAIT_S:.0f}s after its"
            f" CustomResourceDefinition {', '.join(crds)} was Established"
        ),
    )
    return resolve(api, name)


def _defines(crd: Mapping[str, Any], group: str, kind_name: str) -> bool:
    spec = crd.get("spec") or {}
    return spec.get("group") == group and (spec.get("names") or {}).get("kind") == kind_name


def _crds_of(api: client.ApiClient, group: str, kind_name: str) -> list[str]:
    """The cluster's CRDs that define `kind_name` in `group`."""
    if not group:
        return []
    try:
        listing = request(api, "GET", _CRDS, timeout=REQUEST_TIMEOUT)
    except client.ApiException as exc:
        raise CompareError(
            f"listing CustomResourceDefinitions: {exc.status} {status_message(exc) or exc.reason}"
        ) from None
    return [
        str((crd.get("metadata") or {}).get("name"))
        for crd in listing.get("items") or []
        if _defines(crd, group, kind_name)
    ]


def elsewhere(obj: Mapping[str, Any], home: str | None, row: Kind | None = None) -> str | None:
    """The namespace a namespaced object names when it is not `home` (else None); `row`: its
    kind when known (a kind outside the table, found by discovery)."""
    given = (obj.get("metadata") or {}).get("namespace")
    if home is None or not given or given == home:
        return None
    try:
        return str(given) if (row or kind(str(obj.get("kind")))).namespaced else None
    except ValueError:
        return None


def from_pairs(
    pairs: Sequence[tuple[Mapping[str, Any], Mapping[str, Any]]],
    *,
    home: str | None = None,
    rows: Sequence[Kind] | None = None,
) -> DesiredObjects:
    """Desired objects from (raw, defaulted) pairs, e.g. made comparable elsewhere: a snapshot
    of live objects (an operator's baseline), whose raw form leaves allocated fields unset.
    `rows`: each pair's kind, when the caller resolved it (kinds outside the table)."""
    kinds: list[Kind | None] = list(rows) if rows is not None else [None] * len(pairs)
    counts: dict[str, int] = {}
    for (raw, _), row in zip(pairs, kinds, strict=True):
        if elsewhere(raw, home, row) is None:
            counts[str(raw.get("kind"))] = counts.get(str(raw.get("kind")), 0) + 1
    items = []
    for (raw, defaulted), row in zip(pairs, kinds, strict=True):
        name = str((raw.get("metadata") or {}).get("name"))
        kind_name = str(raw.get("kind"))
        other = elsewhere(raw, home, row)
        if other is not None:
            root = f"{kind_name.lower()}/{other}/{name}"
        elif counts[kind_name] == 1:
            root = kind_name.lower()
        else:
            root = f"{kind_name.lower()}/{name}"
        # A Secret's values are held as hashes from here on (compare.judge.secrets).
        items.append(
            DesiredObject(
                kind_name,
                name,
                root,
                hashed_secret(raw),
                hashed_secret(defaulted),
                own_uid=carries_own_uid(defaulted),
                namespace=other,
                qualified=(
                    qualified(kind_name, str(raw.get("apiVersion") or ""))
                    if row is not None and row.served
                    else None
                ),
            )
        )
    return DesiredObjects(tuple(items))


def _dry_run(
    api: client.ApiClient,
    namespace: str,
    obj: Mapping[str, Any],
    api_errors: bool = False,
    row: Kind | None = None,
) -> dict[str, Any]:
    meta = obj.get("metadata") or {}
    body = {key: copy.deepcopy(value) for key, value in obj.items() if key not in ("status",)}
    # A fresh name: a dry-run create of an existing name is refused (409), and the name is
    # identity, not desired state. Only labels and annotations of metadata are judged.
    what = f"{obj.get('kind')} {meta.get('name')}"
    if row is None:
        try:
            row = kind(str(obj.get("kind")))
        except ValueError as exc:
            raise CompareError(f"desired {what}: {exc}") from None
    judged = row
    # An object that names another namespace is defaulted there (its own LimitRanges, ...).
    namespace = str(meta.get("namespace") or namespace)
    kept_meta = {key: meta[key] for key in ("labels", "annotations") if meta.get(key)}
    scope = {"namespace": namespace} if judged.namespaced else {}
    body["metadata"] = {"generateName": DRY_RUN_PREFIX, **scope, **kept_meta}
    try:
        try:
            # By path, not through the typed class: the operator defaults its children here,
            # and the typed classes' models would cost it 24 MiB (`compare.judge.rest`).
            stored = _create(api, judged, namespace, body)
        except client.ApiException as exc:
            if not _name_refused(exc):
                raise
            # A kind that fixes its objects' names (an APIService is `version.group`, a CRD
            # `plural.group`): dry-run under the object's own name.
            body["metadata"] = {"name": meta.get("name"), **scope, **kept_meta}
            try:
                stored = _create(api, judged, namespace, body)
            except client.ApiException as again:
                if again.status != 409:
                    raise
                # It exists (deployed): the API server's server-side apply dry-run onto it,
                # less what other field managers own alone (not the deployer's).
                stored = without_foreign(_apply(api, judged, namespace, body), DRY_RUN_MANAGER)
    except client.ApiException as exc:
        if api_errors:
            raise
        raise CompareError(
            f"desired {what}: the API server refused it"
            f" ({exc.status} {status_message(exc) or exc.reason})"
        ) from None
    # Annotations the API server writes itself (a DaemonSet's
    # `deprecated.daemonset.template.generation`, which follows its generation) are not the
    # deployer's: they are nobody's to keep, like any annotation the object does not set.
    given = meta.get("annotations") or {}
    written = stored["metadata"].get("annotations") or {}
    kept = {key: value for key, value in written.items() if key in given}
    if kept:
        stored["metadata"]["annotations"] = kept
    else:
        stored["metadata"].pop("annotations", None)
    # The name the dry-run generated stands for the object's own name wherever the API server
    # wrote it into the object (a Job's `job-name` pod labels).
    generated = stored["metadata"].get("name")
    stored["metadata"]["name"] = meta.get("name")
    if generated and generated != meta.get("name"):
        stored = replaced_value(stored, str(generated), str(meta.get("name")))
    return stored


def _create(
    api: client.ApiClient, judged: Kind, namespace: str, body: Mapping[str, Any]
) -> dict[str, Any]:
    return request(
        api,
        "POST",
        judged.path(namespace),
        query={"dryRun": "All"},
        body=body,
        timeout=REQUEST_TIMEOUT,
    )


def _apply(
    api: client.ApiClient, judged: Kind, namespace: str, body: Mapping[str, Any]
) -> dict[str, Any]:
    name = str(body["metadata"]["name"])
    return request(
        api,
        "PATCH",
        judged.path(namespace, name),
        query={"dryRun": "All", "fieldManager": DRY_RUN_MANAGER, "force": "true"},
        body=body,
        content_type="application/apply-patch+yaml",
        timeout=REQUEST_TIMEOUT,
    )


def _name_refused(exc: client.ApiException) -> bool:
    """Whether the API server refused the object's (generated) name as invalid."""
    return exc.status == 422 and "metadata.name" in str(exc.body or "")
