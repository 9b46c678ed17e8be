"""The reconcile: converge a WebApp's Deployment and Service, then write its status.

Level-triggered and idempotent, like the seed's `Reconcile`: whatever woke it up (a WebApp
change, any event of a child, the periodic resync), it compares the whole desired state with
the whole live state and acts only on differences. Its inputs are what the watches already
hold (the WebApp's body and its children from watch-backed indices, see `handlers`), so an
unchanged WebApp costs no request at all. Each child goes through the same steps:

  1. absent -> create it (event "Created");
  2. present but not ours (no controller reference to this WebApp, not our labels either) ->
     leave it untouched; the WebApp goes Degraded with reason NameConflict;
  3. judge it closed-world with the toolkit's judge (`compare.judge.diff_object` against the
     desired object as the API server would store it, defaults from a server-side dry-run):
     anything added, changed or removed counts, except the judge's allow-list;
  4. drifted -> write the whole desired content back (`compare.judge.restoring_patch`: every
     top-level field replaced whole, labels and owner references too, the desired annotations
     set; what the allow-list lets others hold is kept), in one JSON patch whose only
     precondition is the object's uid (event "DriftCorrected" naming the fields, or "Updated"
     when the WebApp's spec moved since the child was last converged);
  5. an immutable field differs (a Deployment's selector: the patch is refused with 422 "field
     is immutable"; a Service's clusterIP: the API server keeps the old value, so the patched
     object is still judged drifted) -> delete it (uid precondition) and create it again
     (event "Recreated" naming the fields).

Then the pods (`pods`): one pod of the WebApp that no longer matches its ReplicaSet's template
(the judge's rule) is deleted or evicted so that its ReplicaSet replaces it (event
"PodReplaced"), at most one per WebApp every `POD_REPLACE_INTERVAL_S` seconds.

A new WebApp's children are not dry-run first: while none of them exists, they are created at
once and what the API server stored is their defaulted form (the dry-run would have answered
the same), so a new WebApp costs the creates alone (two requests fewer per WebApp).

Replacing whole fields is what makes closed-world healing possible: apply and merge patches
merge, so a field someone added, or foreign content inside an owned item (a probe's handler,
a volume's source), would survive them or make them invalid.

This module is synchronous and knows nothing of kopf: the handlers run it in a thread and turn
its `Outcome` into Kubernetes Events and retries.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client
from pydantic import ValidationError

from compare.errors import first_line
from compare.judge import DesiredObject, DesiredObjects, diff_object, restoring_patch
from compare.judge.desired import api_defaults, from_pairs
from compare.judge.diff import Mismatch
from compare.judge.kinds import kind as judged_kind
from compare.judge.rest import request, resource_path
from compare.webapp import WebApp
from compare.webapp.load import format_validation_error
from webapp_operator.builders import (
    build_deployment,
    build_service,
    controller_reference,
    owner_reference,
    owning_webapp,
)
from webapp_operator.compact import Packed
from webapp_operator.leader import NotLeading
from webapp_operator.names import (
    API_GROUP,
    API_VERSION,
    FIELD_MANAGER,
    GENERATION_ANNOTATION,
    MANAGED_BY_LABEL,
    PLURAL,
)
from webapp_operator.pods import DriftedPod, PodReplacer, controlling_replicaset, drifted_pods
from webapp_operator.registry import Registry
from webapp_operator.status import Failure, compute_status, unobserved_for
from webapp_operator.types import Phase

__all__ = [
    "CHILD_KINDS",
    "NOT_LEADING",
    "Change",
    "Outcome",
    "ReconcileError",
    "Reconciler",
    "api_error",
    "event_messages",
]

MERGE_PATCH = "application/merge-patch+json"
JSON_PATCH = "application/json-patch+json"
# A hung request must not hold a reconcile (and its WebApp) forever.
REQUEST_TIMEOUT_S = 30.0
# The kinds of a WebApp's children (their paths: `compare.judge.kinds`).
CHILD_KINDS = ("Deployment", "Service")
# The failure reason of a reconcile cut short because this replica stopped leading.
NOT_LEADING = "NotLeading"
# Every way an API call fails: an error status, or an unreachable, slow or overloaded server.
_API_FAILURES = (client.ApiException, urllib3.exceptions.HTTPError, OSError)
_MAX_MESSAGE = 900  # an Event's message is cut at 1 KiB

Key = tuple[str, str]
Children = Mapping[str, Mapping[str, Any] | None]  # kind -> the live child, None when absent
# The WebApp's pods to judge (from the watch: those changed in place, `handlers.Controller`).
Pods = tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class Change:
    """One child the reconcile created or corrected: what the measurement events report."""

    # "Created" | "DriftCorrected" | "Updated" (the spec moved) | "Recreated" (an immutable
    # field differed) | "PodReplaced" (a pod changed in place)
    reason: str
    kind: str
    namespace: str
    name: str
    fields: tuple[str, ...] = ()
    # A correction's stages (`time.monotonic()` seconds, by name: "decided" the drift was
    # found, "built" the patch, "wire" handed to the connection pool, "answered" read,
    # "decoded"; "new_connections" the pool opened for it). The heal latency's stages
    # (`handlers`, bench/operator_heal.py).
    request: dict[str, float] | None = field(default=None, compare=False)

    @property
    def message(self) -> str:
        what = f"{self.kind} {self.namespace}/{self.name}"
        if self.reason == "Created":
            return f"created {what}"
        detail = "; ".join(self.fields) or "metadata only"
        if self.reason == "Recreated":
            text = f"deleted and re-created {what}: an immutable field differs: {detail}"
        elif self.reason == "PodReplaced":
            text = f"{what} no longer matches its ReplicaSet's template, {detail}"
        else:
            verb = "updated" if self.reason == "Updated" else "corrected"
            text = f"{verb} {what}: {detail}"
        return _cut(text)


def _cut(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


def event_messages(changes: Sequence[Change]) -> list[tuple[str, str]]:
    """The Events one reconcile posts: one per reason, in the order the reasons first came,
    its message the changes' messages joined. A WebApp's first reconcile creates two children:
    one Event, not two (an API request per Event, a thousand WebApps created at once). The
    heal detection reads an Event's reason and the object it is posted on, never its message.
    """
    grouped: dict[str, list[str]] = {}
    for change in changes:
        grouped.setdefault(change.reason, []).append(change.message)
    return [(reason, _cut("; ".join(messages))) for reason, messages in grouped.items()]


@dataclass(frozen=True)
class Outcome:
    """What one reconcile did and found."""

    found: bool = True  # False: the WebApp is being deleted, nothing to do
    changes: tuple[Change, ...] = ()
    status_written: bool = False
    failure: Failure | None = None
    retry: bool = False  # the failure is transient: try again, with backoff
    generation: int = 0
    # Children this reconcile wrote: (kind, resourceVersion it replaced or None, the object as
    # the API server returned it): read-your-writes until the watch delivers them.
    written: tuple[tuple[str, str | None, Mapping[str, Any]], ...] = ()
    # Run again after this many seconds at the latest (a drifted pod waits for the rate limit).
    requeue_after: float | None = None
    # The uids of the pods judged drifted and not replaced yet (the rate limit); None: the
    # pods were not judged (the reconcile failed before).
    pods_left: tuple[str, ...] | None = None


class ReconcileError(Exception):
    """A step failed; `reason` becomes the Degraded condition's reason."""

    def __init__(self, reason: str, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry = retry

    def failure(self) -> Failure:
        return Failure(self.reason, self.message)


def api_error(exc: client.ApiException) -> str:
    """The API server's own message when it sent a Status, else the HTTP reason."""
    try:
        message = json.loads(exc.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return f"{exc.status} {message or exc.reason}"


def _transient(exc: client.ApiException) -> bool:
    """Throttled (429), timed out (408, 504), a server error, or no HTTP answer at all (the
    client reports a TLS failure as status 0): try again, nothing to fix."""
    return not exc.status or exc.status in (408, 429) or exc.status >= 500


def _immutable(exc: BaseException) -> bool:
    """The API server refused to change an immutable field (422 `field is immutable`)."""
    return (
        isinstance(exc, client.ApiException)
        and exc.status == 422
        and "field is immutable" in (exc.body or "")
    )


def _failed_test(exc: client.ApiException) -> bool:
    """A JSON patch's failed `test` is a 422 without causes (validation errors list theirs)."""
    try:
        details = json.loads(exc.body or "{}").get("details") or {}
    except (ValueError, AttributeError):
        return False
    return exc.status == 422 and not details.get("causes")


def _failure(reason: str, what: str, exc: BaseException) -> ReconcileError:
    """Any failure of an API call, HTTP or transport, as the reconcile reports it: `reason`
    for what the API server refused, `ApiUnavailable` for what retrying may fix."""
    where = f"{what}: " if what else ""
    if isinstance(exc, client.ApiException):
        cause = "ApiUnavailable" if _transient(exc) else reason
        return ReconcileError(cause, where + api_error(exc))
    if isinstance(exc, NotLeading):
        # Deposed: the fenced client refuses every request. Not a failure of the WebApp's.
        return ReconcileError(NOT_LEADING, "this replica no longer leads", retry=False)
    return ReconcileError("ApiUnavailable", where + _transport_error(exc))


def _transport_error(exc: BaseException) -> str:
    return f"API server unreachable ({first_line(exc)})"


def _who(child: Mapping[str, Any]) -> str:
    ref = controller_reference(child)
    if ref is not None:
        return f"controlled by {ref.get('kind')} {ref.get('name')}"
    manager = ((child.get("metadata") or {}).get("labels") or {}).get(MANAGED_BY_LABEL)
    return f"managed by {manager}" if manager else "not created by this operator"


def _as_defaulted(built: Mapping[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    """A created child as the dry-run would have answered for it: the stored object, its
    metadata cut to what is judged (labels; of the annotations, those the child sets)."""
    meta = stored.get("metadata") or {}
    given = (built.get("metadata") or {}).get("annotations") or {}
    kept = {k: v for k, v in (meta.get("annotations") or {}).items() if k in given}
    metadata = {k: meta[k] for k in ("name", "namespace", "labels") if k in meta}
    if kept:
        metadata["annotations"] = kept
    defaulted = {k: v for k, v in stored.items() if k != "status"}
    defaulted["metadata"] = metadata
    return defaulted


def _is_stamp(mismatch: Mismatch) -> bool:
    return mismatch.path.endswith(f"[{GENERATION_ANNOTATION}]")


def spec_moved(found: Sequence[Mismatch]) -> bool:
    """Whether a child's differences include its generation stamp: the WebApp's spec moved
    since the child was last converged, so the change is an update, not a correction."""
    return any(_is_stamp(m) for m in found)


def _pack_desired(desired: DesiredObjects) -> Packed:
    return Packed([[d.kind, d.name, d.root, d.raw, d.defaulted] for d in desired.items])


def _unpack_desired(packed: Packed) -> DesiredObjects:
    """A fresh copy of what `_pack_desired` packed (the secrets already hashed)."""
    return DesiredObjects(tuple(DesiredObject(*item) for item in packed.unpack()))


class Reconciler:
    """Converges WebApps; one instance is shared by every reconcile thread."""

    def __init__(
        self,
        api: client.ApiClient,
        registry: Registry,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        request_timeout: float = REQUEST_TIMEOUT_S,
    ) -> None:
        self._api = api
        self._timeout = request_timeout
        self._registry = registry
        self._clock = clock
        self.pods = PodReplacer(api, timeout=request_timeout)
        self._lock = threading.Lock()
        # Per WebApp: "uid/generation" and its children, raw and defaulted, dropped by
        # `forget`: one dry-run per spec change, not per reconcile. Packed (`compact`): most
        # of what the operator holds per WebApp otherwise.
        self._desired: dict[Key, tuple[str, Packed]] = {}
        # Per WebApp: the status last written and the WebApp resourceVersion it was computed
        # from, so a reconcile that runs before the watch delivered that write does not
        # write the same status again.
        self._statuses: dict[Key, tuple[str, Packed]] = {}

    def forget(self, key: Key) -> None:
        with self._lock:
            self._desired.pop(key, None)
            self._statuses.pop(key, None)
        self.pods.forget(key)

    def reconcile(self, body: Mapping[str, Any], children: Children, pods: Pods = ()) -> Outcome:
        """One pass over a WebApp `body` and its live `children` and `pods` (all from the
        watches)."""
        meta = body["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        if meta.get("deletionTimestamp"):
            # Being deleted: the finalizer handler owns the rest of its life.
            return Outcome(found=False)
        live: dict[str, Mapping[str, Any] | None] = {}
        changes: list[Change] = []
        written: list[tuple[str, str | None, Mapping[str, Any]]] = []
        failure: ReconcileError | None = None
        try:
            self._registry.record(namespace, name, meta["uid"])
            desired_objects, created = self._desired_or_created((namespace, name), body, children)
            for desired in desired_objects.items:
                current = children.get(desired.kind)
                result: Mapping[str, Any] | None
                change: Change | None
                if desired.kind in created:
                    result = created[desired.kind]
                    change = Change("Created", desired.kind, namespace, name)
                else:
                    result, change = self._converge(desired, current, body)
                live[desired.kind] = result
                if change is not None:
                    changes.append(change)
                    if result is not None:
                        before = ((current or {}).get("metadata") or {}).get("resourceVersion")
                        written.append((desired.kind, before, result))
        except ReconcileError as exc:
            failure = exc
        requeue = None
        pods_left: tuple[str, ...] | None = None
        if failure is None:
            try:
                requeue, pods_left = self._replace_drifted_pod((namespace, name), pods, changes)
            except ReconcileError as exc:
                failure = exc
        now = self._clock()
        unobserved = None if failure else unobserved_for(live.get("Deployment"), now)
        status_written = False
        if unobserved is not None:
            # Nothing to say yet; the controller's first look wakes the next reconcile (and
            # this one looks again when the grace ends, should that event never come).
            requeue = unobserved if requeue is None else min(requeue, unobserved)
        else:
            status = compute_status(
                body,
                live.get("Deployment"),
                failure=failure.failure() if failure else None,
                now=now,
                # A reconcile that failed before it got to the Deployment knows nothing new
                # about it: the last known counts and conditions stay.
                deployment_known="Deployment" in live,
            )
            try:
                status_written = self._write_status(body, status)
            except ReconcileError as exc:
                failure = failure or exc
        return Outcome(
            changes=tuple(changes),
            status_written=status_written,
            failure=failure.failure() if failure else None,
            retry=failure.retry if failure else False,
            generation=meta.get("generation") or 0,
            written=tuple(written),
            requeue_after=requeue,
            pods_left=pods_left,
        )

    def _replace_drifted_pod(
        self, key: Key, pods: Pods, changes: list[Change]
    ) -> tuple[float | None, tuple[str, ...]]:
        """Replace one pod that no longer matches its template, if the rate limit allows;
        when to look again if another (or this one, rate-limited) is left, and the uids of
        those left."""
        drifted: list[DriftedPod] = drifted_pods(pods, self._replicasets(key[0], pods))
        uids = tuple(str(d.pod["metadata"].get("uid")) for d in drifted)
        if not drifted:
            return None, ()
        wait = self.pods.wait_left(key)
        if wait > 0:
            return wait, uids
        pod = drifted[0]
        where = f"Pod {key[0]}/{pod.name}"
        try:
            how = self.pods.replace(key, pod)
        except _API_FAILURES as exc:
            if isinstance(exc, client.ApiException) and exc.status in (404, 409):
                return None, uids[1:]  # already gone or replaced: nothing of ours left to do
            if isinstance(exc, client.ApiException) and exc.status == 429:
                raise ReconcileError(
                    "DisruptionBudget",
                    f"{where} differs from its template; its PodDisruptionBudget allows no"
                    " disruption now: retrying",
                ) from None
            raise _failure("PodReplaceFailed", f"replacing {where}", exc) from None
        fields = (f"{how} so that its ReplicaSet replaces it", *pod.fields)
        changes.append(Change("PodReplaced", "Pod", key[0], pod.name, fields))
        return (self.pods.wait_left(key) if len(drifted) > 1 else None), uids[1:]

    def _replicasets(self, namespace: str, pods: Pods) -> dict[str, Mapping[str, Any]]:
        """The ReplicaSets the pods to judge belong to, by name: read (a GET each) rather than
        watched, as pods are judged only once changed in place; one gone is left out."""
        found: dict[str, Mapping[str, Any]] = {}
        for name in sorted({owner for pod in pods if (owner := controlling_replicaset(pod))}):
            try:
                found[name] = self._raw_call("GET", "ReplicaSet", namespace, name)
            except _API_FAILURES as exc:
                if isinstance(exc, client.ApiException) and exc.status == 404:
                    continue  # gone: its pods go with it
                raise _failure(
                    "ReadFailed", f"reading ReplicaSet {namespace}/{name}", exc
                ) from None
        return found

    @staticmethod
    def _parse(body: Mapping[str, Any]) -> WebApp:
        meta = body["metadata"]
        try:
            return WebApp.model_validate(
                {
                    "apiVersion": body.get("apiVersion"),
                    "kind": body.get("kind"),
                    "metadata": {"name": meta["name"], "namespace": meta.get("namespace")},
                    "spec": body.get("spec") or {},
                }
            )
        except ValidationError as exc:
            # Retrying cannot fix a spec; the next edit of the WebApp wakes the reconcile.
            msg = format_validation_error(exc)
            raise ReconcileError("InvalidSpec", f"spec.{msg}", retry=False) from None

    def _cached(self, key: Key, body: Mapping[str, Any]) -> tuple[str, DesiredObjects | None]:
        """The cache's version for `body` ("uid/generation") and its entry, if current."""
        meta = body["metadata"]
        version = f"{meta['uid']}/{meta.get('generation') or 0}"
        with self._lock:
            cached = self._desired.get(key)
        if cached is not None and cached[0] == version:
            return version, _unpack_desired(cached[1])
        return version, None

    def cached_child(self, key: Key, body: Mapping[str, Any], kind: str) -> DesiredObject | None:
        """The desired child of `kind` as cached for `body`'s generation; None when nothing is
        cached for it (no dry-run here: the hot path, `fastheal`, only judges what a reconcile
        of this generation has judged already)."""
        _, cached = self._cached(key, body)
        if cached is None:
            return None
        return next((d for d in cached.items if d.kind == kind), None)

    def _keep(self, key: Key, version: str, desired: DesiredObjects) -> DesiredObjects:
        packed = _pack_desired(desired)
        with self._lock:
            self._desired[key] = (version, packed)
        # What every later reconcile of this generation gets: the same, decoded.
        return _unpack_desired(packed)

    def _manifest(self, key: Key, body: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The desired children as built (before the API's defaults)."""
        webapp = self._parse(body)
        owner = owner_reference(body)
        generation = str(body["metadata"].get("generation") or 0)
        manifest = []
        for built in (
            build_deployment(webapp, key[0], owner),
            build_service(webapp, key[0], owner),
        ):
            built["metadata"]["annotations"] = {GENERATION_ANNOTATION: generation}
            manifest.append(built)
        return manifest

    def _desired_or_created(
        self, key: Key, body: Mapping[str, Any], children: Children
    ) -> tuple[DesiredObjects, dict[str, Mapping[str, Any]]]:
        """The desired children, and those created on the way (kind -> as stored).

        While no child exists and nothing is cached, the children are created straight away
        and the stored objects are their defaulted form: a create is defaulted exactly as the
        dry-run create would be (same admission, same defaults; only metadata's labels and
        annotations and the fields the desired object sets are judged, so the identity and
        allocated fields a real create adds change nothing). Anything else (a child exists,
        a create refused or taken by an object of the same name) goes the dry-run's way."""
        version, cached = self._cached(key, body)
        if cached is not None or any(children.get(kind) is not None for kind in CHILD_KINDS):
            return cached or self._desired_objects(key, body), {}
        manifest = self._manifest(key, body)
        created: dict[str, Mapping[str, Any]] = {}
        for built in manifest:
            meta = built["metadata"]
            where = f"{built['kind']} {meta['namespace']}/{meta['name']}"
            try:
                stored = self._create_raw(built, where)
            except ReconcileError:
                if not created:
                    raise
                stored = None  # reported with what was created, by the usual way's create
            if stored is None:
                break  # the name is taken: converge it the usual way
            created[built["kind"]] = stored
        if len(created) < len(manifest):
            return self._desired_objects(key, body), created
        pairs = [(built, _as_defaulted(built, created[built["kind"]])) for built in manifest]
        return self._keep(key, version, from_pairs(pairs, home=key[0])), created

    def _desired_objects(self, key: Key, body: Mapping[str, Any]) -> DesiredObjects:
        """The children as the API server would store them; cached per WebApp by its uid and
        generation (the spec cannot change without a new generation)."""
        version, cached = self._cached(key, body)
        if cached is not None:
            return cached
        manifest = self._manifest(key, body)
        try:
            desired = api_defaults(self._api, key[0], manifest, api_errors=True)
        except _API_FAILURES as exc:
            # Refused at dry-run (a quota, a policy, an admission webhook): the children could
            # not be created or corrected either.
            raise _failure("DryRunFailed", "dry-run of the desired children", exc) from None
        return self._keep(key, version, desired)

    # -- one child -----------------------------------------------------------------------------

    def _converge(
        self, desired: DesiredObject, current: Mapping[str, Any] | None, body: Mapping[str, Any]
    ) -> tuple[Mapping[str, Any] | None, Change | None]:
        """Bring one child to its desired state: what the API server holds, and the change."""
        kind, meta = desired.kind, desired.raw["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        where = f"{kind} {namespace}/{name}"
        if current is None:
            created = self._create(desired, where)
            if created is not None:
                return created, Change("Created", kind, namespace, name)
            # It exists after all (the index had not seen it yet, or it lost our labels).
            current = self._call("ReadFailed", f"reading {where}", "GET", kind, namespace, name)
        # Ours: our controller reference, or (someone stripped it) no controller but our labels.
        owner = owning_webapp(current)
        webapp = body["metadata"]
        if owner is None or owner.name != webapp["name"] or owner.uid not in (None, webapp["uid"]):
            raise ReconcileError(
                "NameConflict",
                f"{where} already exists and is not this WebApp's ({_who(current)});"
                " it is left untouched: rename the WebApp or remove that object",
            )
        found = diff_object(kind.lower(), desired.defaulted, current, raw=desired.raw)
        reference_lost = owner.uid is None
        if not found and not reference_lost:
            return current, None
        # No precondition: the Deployment controller writes status and its revision annotation
        # right after every spec change, and a resourceVersion guard would turn each heal into
        # a conflict and a second round trip; the patch touches none of that, and whatever
        # changed meanwhile in what it does touch ends up desired all the same.
        stamps = {"decided": time.monotonic()}
        patch = restoring_patch(desired.raw, current)
        stamps["built"] = time.monotonic()
        try:
            updated = self._raw_call(
                "PATCH",
                kind,
                namespace,
                name,
                body=patch,
                manager=FIELD_MANAGER,
                content_type=JSON_PATCH,
                # The body is the builders' own (no unknown field to warn about, and the
                # client reads no warnings): the API server skips its strict decoding pass.
                validation="Ignore",
                stamps=stamps,
            )
        except _API_FAILURES as exc:
            if _immutable(exc):
                return self._recreate(desired, current, [str(m) for m in found], where)
            raise self._call_failure("PatchFailed", f"correcting {where}", exc) from None
        stamps["decoded"] = time.monotonic()
        # What the patch could not change: an immutable field the API server keeps as it was
        # (a Service's clusterIP, which an update without one leaves alone). Judged as ever.
        left = diff_object(kind.lower(), desired.defaulted, updated, raw=desired.raw)
        if left:
            return self._recreate(desired, updated, [str(m) for m in left], where)
        moved = spec_moved(found)
        fields = [str(m) for m in found if not _is_stamp(m)]
        if reference_lost:
            fields.append(f"{kind.lower()}.metadata.ownerReferences: restored")
        reason = "Updated" if moved else "DriftCorrected"
        return updated, Change(reason, kind, namespace, name, tuple(fields), stamps)

    def _recreate(
        self, desired: DesiredObject, current: Mapping[str, Any], fields: list[str], where: str
    ) -> tuple[Mapping[str, Any] | None, Change | None]:
        """Delete the child (only the very object judged: uid precondition) and create it
        again: the one way to change an immutable field."""
        meta = desired.raw["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        uid = (current.get("metadata") or {}).get("uid")
        self._call(
            "DeleteFailed",
            f"deleting {where} to re-create it",
            "DELETE",
            desired.kind,
            namespace,
            name,
            body={
                "apiVersion": "v1",
                "kind": "DeleteOptions",
                "preconditions": {"uid": uid},
                # Its ReplicaSets and pods go to the garbage collector, not waited for.
                "propagationPolicy": "Background",
            },
        )
        created = self._create(desired, where)
        if created is None:
            # Still there (a finalizer holds it): its deletion event wakes the next reconcile.
            raise ReconcileError("Conflict", f"re-creating {where}: still being deleted; retrying")
        return created, Change("Recreated", desired.kind, namespace, name, tuple(fields))

    def _create(self, desired: DesiredObject, where: str) -> dict[str, Any] | None:
        """Create the child; None when the name is already taken (409)."""
        return self._create_raw(desired.raw, where)

    def _create_raw(self, obj: Mapping[str, Any], where: str) -> dict[str, Any] | None:
        namespace = obj["metadata"]["namespace"]
        try:
            return self._raw_call(
                "POST", str(obj["kind"]), namespace, body=dict(obj), manager=FIELD_MANAGER
            )
        except _API_FAILURES as exc:
            if isinstance(exc, client.ApiException) and exc.status == 409:
                return None
            raise _failure("CreateFailed", f"creating {where}", exc) from None

    # -- API calls -----------------------------------------------------------------------------

    def _raw_call(
        self,
        method: str,
        kind: str,
        namespace: str,
        name: str | None = None,
        *,
        body: Any = None,
        manager: str | None = None,
        content_type: str | None = None,
        validation: str | None = None,
        stamps: dict[str, float] | None = None,
    ) -> dict[str, Any]:
        # By path on the shared client, not through the typed classes: the same request,
        # without the 24 MiB of generated models they import (`compare.judge.rest`).
        return request(
            self._api,
            method,
            judged_kind(kind).path(namespace, name),
            query={"fieldManager": manager, "fieldValidation": validation},
            body=body,
            content_type=content_type,
            timeout=self._timeout,
            stamps=stamps,
        )

    def _call(
        self, reason: str, what: str, method: str, kind: str, *args: Any, **kwargs: Any
    ) -> dict[str, Any]:
        """One child call; every failure, HTTP or transport, becomes a ReconcileError."""
        try:
            return self._raw_call(method, kind, *args, **kwargs)
        except _API_FAILURES as exc:
            raise self._call_failure(reason, what, exc) from None

    @staticmethod
    def _call_failure(reason: str, what: str, exc: BaseException) -> ReconcileError:
        if isinstance(exc, client.ApiException) and (exc.status == 409 or _failed_test(exc)):
            # The uid precondition: the object was replaced since the watch showed it.
            return ReconcileError("Conflict", f"{what}: replaced meanwhile; retrying")
        if isinstance(exc, client.ApiException) and exc.status == 404:
            return ReconcileError("Conflict", f"{what}: deleted meanwhile; retrying")
        return _failure(reason, what, exc)

    def _write_status(self, body: Mapping[str, Any], status: dict[str, Any]) -> bool:
        """Patch the status subresource, only when it differs from what is stored."""
        meta = body["metadata"]
        key = (meta["namespace"], meta["name"])
        version = str(meta.get("resourceVersion"))
        with self._lock:
            last = self._statuses.get(key)
        if body.get("status") == status or (
            last is not None and last[0] == version and last[1].unpack() == status
        ):
            return False
        self._patch_status(meta["namespace"], meta["name"], status)
        with self._lock:
            self._statuses[key] = (version, Packed(status))
        return True

    def _patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        what = f"writing the status of {namespace}/{name}"
        try:
            request(
                self._api,
                "PATCH",
                resource_path(f"{API_GROUP}/{API_VERSION}", PLURAL, namespace, name, "status"),
                query={"fieldManager": FIELD_MANAGER},
                body={"status": status},
                content_type=MERGE_PATCH,
                timeout=self._timeout,
            )
        except _API_FAILURES as exc:
            raise _failure("StatusFailed", what, exc) from None

    # -- deletion ----------------------------------------------------------------------------

    def cleanup(self, namespace: str, name: str, uid: str) -> bool:
        """The finalizer's work: the registry entry goes; phase Deleting while it cannot.

        The phase is written only when the removal failed and the finalizer is retried, so a
        WebApp whose cleanup is held shows why; one that goes at once is gone before anyone
        could read the phase (a status write of every deleted WebApp, for nobody, before).
        The Deployment and Service are not deleted here: their owner references hand them to
        the garbage collector once the finalizer is removed. True when an entry was removed.
        """
        self.forget((namespace, name))
        try:
            return self._registry.remove(namespace, name, uid)
        except _API_FAILURES as exc:
            what = f"removing {namespace}/{name} from the registry"
            failure = _failure("CleanupFailed", what, exc)
        # Best effort: the failure above is what is reported and retried either way.
        with contextlib.suppress(ReconcileError):
            self._patch_status(namespace, name, {"phase": Phase.DELETING.value})
        raise failure
