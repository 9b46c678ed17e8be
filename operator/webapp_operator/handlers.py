"""The kopf wiring: which events wake which reconcile, what it reads, how failures are retried.

kopf is edge-triggered; the operator must be level-triggered. So every WebApp gets one kopf
*daemon* that runs `Reconciler.reconcile` in a loop, one reconcile at a time per WebApp
(controller-runtime's work-queue guarantee). The daemon starts on create and on resume (kopf
spawns it for every existing WebApp at startup) and then sleeps until one of:

  * a kick from `@kopf.on.event` on the WebApp: its spec changed (a new generation);
  * a kick from `@kopf.on.event` on an owned Deployment or Service: ANY event, including
    deletion, so drift is healed as soon as the API server reports it;
  * a kick from `@kopf.on.event` on one of its pods whose spec or labels changed in place
    (status updates, which are most pod events, wake nothing);
  * the resync period (30 s by default, the seed's RequeueAfter).

Reads come from the watches, not from GETs (controller-runtime's cache): the daemon's live
body is the WebApp, and `@kopf.index` indices hold the children and the pods (a pod's
ReplicaSet is read when the pod is judged: only a pod changed in place, or one found at
start-up); these watches are label-selected to the operator's own objects
(`settings.watching.label_selectors`: the pod template carries the operator's labels). What a
reconcile wrote is read back from its own response until the watch delivers it
(read-your-writes), so a quick second reconcile never works from a stale copy.

A failed reconcile waits a bounded exponential delay before the next attempt, but any kick (a
child's event, a spec fix) ends the wait early, as a new event does in controller-runtime's
rate-limited queue. `@kopf.on.delete` is the finalizer (example.com/cleanup),
`@kopf.on.validate` the admission webhook.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import kopf
from kubernetes import client

from webapp_operator.admission import admission_problems, scale_problems
from webapp_operator.builders import owning_webapp
from webapp_operator.compact import PackedObject, lean
from webapp_operator.fastheal import Healer
from webapp_operator.health import Counters
from webapp_operator.kube import connection_info, kopf_session
from webapp_operator.names import (
    API_GROUP,
    API_VERSION,
    INSTANCE_LABEL,
    KIND,
    PLURAL,
    SCALE_WEBHOOK_ID,
    WEBHOOK_ID,
)
from webapp_operator.reconciler import (
    CHILD_KINDS,
    NOT_LEADING,
    REQUEST_TIMEOUT_S,
    Change,
    Outcome,
    ReconcileError,
    Reconciler,
    event_messages,
)

__all__ = ["Backoff", "Controller", "delivered", "owner_key", "register"]

log = logging.getLogger("webapp_operator.reconcile")

Key = tuple[str, str]  # (namespace, name) of a WebApp


@dataclass(frozen=True)
class Backoff:
    """Bounded exponential backoff: base, 2*base, 4*base, ... up to cap."""

    base: float = 0.5
    cap: float = 60.0

    def delay(self, failures: int) -> float:
        return float(min(self.cap, self.base * 2 ** max(0, failures - 1)))


# A child as the watch delivered it (kind, namespace, name) -> the object.
ChildKey = tuple[str, str, str]


@dataclass
class Controller:
    """What the handlers share: the reconciler, one wake-up per WebApp, retry counters, and
    the children this process wrote (read-your-writes)."""

    reconciler: Reconciler
    resync_seconds: float = 30.0
    backoff: Backoff = field(default_factory=Backoff)
    counters: Counters = field(default_factory=Counters)
    # The threads reconciles run in (the kubernetes client blocks); shared with kopf's own
    # sync handlers so that one setting bounds the operator's concurrency.
    executor: Executor | None = None
    # How many reconciles may hold their inputs at once (the executor's threads). A daemon
    # takes its snapshot of the WebApp only once it has a slot: in a burst the others wait
    # holding nothing, instead of a thousand snapshots queued in the executor (tens of MiB at
    # 1,000 WebApps), and each reconcile starts from the newest body, not a queued one.
    concurrency: int | None = None
    _wakeups: dict[Key, asyncio.Event] = field(default_factory=dict)
    _generations: dict[Key, int] = field(default_factory=dict)
    _failures: dict[Key, int] = field(default_factory=dict)
    # child -> (the resourceVersion the write replaced, the object written, packed)
    _written: dict[ChildKey, tuple[str | None, PackedObject]] = field(default_factory=dict)
    _kicked: dict[Key, float] = field(default_factory=dict)
    # Per pod uid: a hash of its spec and labels as last seen, so that only a change in place
    # (not the kubelet's status updates) wakes its WebApp.
    _pod_specs: dict[str, int] = field(default_factory=dict)
    # Per WebApp: the uids of its pods to judge against their ReplicaSet's template (`pods`):
    # those changed in place since this process saw them, and those it found already there
    # when it started (what happened to them before is unknown). The others were made from
    # their template by the ReplicaSet controller and have not changed since.
    _suspects: dict[Key, set[str]] = field(default_factory=dict)
    # When this process started (wall clock, as pods' creationTimestamp).
    started: float = field(default_factory=time.time)
    # The hot path of a child's drift (`fastheal`), when the operator has one.
    healer: Healer | None = None
    # Per WebApp: its daemon's live body (kopf keeps it current), and one turn at a time
    # between its reconcile and the hot path.
    _bodies: dict[Key, kopf.Body] = field(default_factory=dict)
    _turns: dict[Key, asyncio.Lock] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # An asyncio.Semaphore binds no loop until first awaited (Python >= 3.10).
        self._slots: contextlib.AbstractAsyncContextManager[Any] = (
            contextlib.nullcontext()
            if self.concurrency is None
            else asyncio.Semaphore(self.concurrency)
        )

    def slot(self) -> contextlib.AbstractAsyncContextManager[Any]:
        """A reconcile's turn."""
        return self._slots

    def turn(self, key: Key) -> asyncio.Lock:
        """The WebApp's own turn: its reconcile or the hot path, never both at once."""
        return self._turns.setdefault(key, asyncio.Lock())

    def live(self, key: Key, body: kopf.Body) -> None:
        """The daemon's body of a WebApp: what the hot path reads its identity and generation
        from."""
        self._bodies[key] = body

    async def heal_hot(self, child: Mapping[str, Any]) -> bool:
        """Heal a child's drift from its watch event on the loop (`fastheal`), when its WebApp's
        reconcile has nothing pending: it worked from the current generation, its last attempt
        succeeded, no kick waits, it is not running, and nothing this process wrote to the
        child is still on its way. True when it patched (the patch's own event wakes the
        reconcile then); False: the reconcile's to do, as ever."""
        key = owner_key(child)
        kind = str(child.get("kind"))
        if self.healer is None or key is None or kind not in CHILD_KINDS:
            return False
        webapp = self._bodies.get(key)
        wakeup = self._wakeups.get(key)
        turn = self.turn(key)
        if (
            webapp is None
            or wakeup is None
            or wakeup.is_set()
            or turn.locked()
            or key in self._failures
            or (webapp.get("metadata") or {}).get("deletionTimestamp")
            or self._generations.get(key) != (webapp["metadata"].get("generation") or 0)
        ):
            return False
        meta = child.get("metadata") or {}
        child_key = (kind, key[0], str(meta.get("name")))
        pending = self._written.get(child_key)
        if pending is not None:
            before, written = pending
            if not delivered(meta.get("resourceVersion"), before, written.resource_version):
                return False  # our write is still on its way: an event from before it
            del self._written[child_key]
        arrived = time.monotonic()
        desired = self.reconciler.cached_child(key, webapp, kind)
        if desired is None:
            return False
        async with turn:
            started = time.monotonic()
            healed = await self.healer.heal(desired, child, webapp)
        if healed is None:
            return False
        namespace = key[0]
        written = PackedObject(lean(healed.updated))
        self.wrote(namespace, ((kind, desired.name, healed.before, written),))
        if not healed.fields:
            return False  # an immutable field left: the reconcile re-creates the child
        change = Change(
            "DriftCorrected", kind, namespace, desired.name, healed.fields, healed.stamps
        )
        self.counters.changes += 1
        _report(webapp, key, [change], (arrived, started, time.monotonic()))
        return True

    def wakeup(self, key: Key) -> asyncio.Event:
        return self._wakeups.setdefault(key, asyncio.Event())

    def kick(self, key: Key | None) -> None:
        if key is not None and key in self._wakeups:
            # The first kick since the last wake-up: when the event that needs work arrived.
            self._kicked.setdefault(key, time.monotonic())
            self._wakeups[key].set()

    def pod_seen(self, pod: Mapping[str, Any], deleted: bool) -> None:
        """A pod event: when the pod's spec or labels changed since its last event (a change
        in place, never a status update), or it is one this process found already there, it
        is to be judged and its WebApp is kicked."""
        meta = pod.get("metadata") or {}
        uid = str(meta.get("uid"))
        key = pod_owner_key(pod)
        if deleted:
            self._pod_specs.pop(uid, None)
            if key is not None and key in self._suspects:
                self._suspects[key].discard(uid)
            return
        # Not `spec.nodeName`: the scheduler's binding sets it once, the one change Kubernetes
        # makes to a pod's spec after its creation (it cannot be changed afterwards).
        spec = {k: v for k, v in (pod.get("spec") or {}).items() if k != "nodeName"}
        seen = hash(json.dumps([spec, meta.get("labels")], sort_keys=True))
        before = self._pod_specs.get(uid)
        self._pod_specs[uid] = seen
        changed = before is not None and before != seen
        if key is not None and (changed or (before is None and _older(meta, self.started))):
            self._suspects.setdefault(key, set()).add(uid)
            self.kick(key)

    def suspects(self, key: Key) -> frozenset[str]:
        """The WebApp's pods to judge (uids)."""
        return frozenset(self._suspects.get(key, ()))

    def judged(self, key: Key, uids: frozenset[str], left: tuple[str, ...] | None) -> None:
        """A reconcile judged the pods `uids`: all but those `left` to replace (None: it
        failed before judging them, so all stay)."""
        if left is None or key not in self._suspects:
            return
        self._suspects[key] -= uids - set(left)
        if not self._suspects[key]:
            del self._suspects[key]

    def woken(self, key: Key) -> float | None:
        """When the kick this reconcile answers arrived (monotonic), if it was a kick."""
        return self._kicked.pop(key, None)

    def spec_seen(self, key: Key, generation: int) -> None:
        """A WebApp event: kick only for a new generation (status writes do not bump it)."""
        if self._generations.get(key) != generation:
            self.kick(key)

    def attempted(self, key: Key, generation: int) -> None:
        """The generation a reconcile has worked from: its own status writes (or kopf's
        annotations) bring no new generation and so wake nothing, even while it fails."""
        self._generations[key] = generation

    def succeeded(self, key: Key) -> None:
        self._failures.pop(key, None)

    def failed(self, key: Key) -> float:
        """Count a failure; the delay before the next attempt."""
        self._failures[key] = self._failures.get(key, 0) + 1
        return self.backoff.delay(self._failures[key])

    def wrote(self, namespace: str, written: Written) -> None:
        for kind, name, before, obj in written:
            self._written[(kind, namespace, name)] = (before, obj)

    def child(self, kind: str, namespace: str, name: str, index: Any) -> PackedObject | None:
        """The child as the watch shows it, unless it still shows what this process replaced
        (packed: the reconcile's thread unpacks it, `reconcile_packed`)."""
        seen = _first(index, (namespace, name))
        mine = self._written.get((kind, namespace, name))
        if mine is None:
            return seen
        before, written = mine
        version = seen.resource_version if seen is not None else None
        if not delivered(version, before, written.resource_version):
            return written  # the watch has not delivered our write yet
        del self._written[(kind, namespace, name)]
        return seen

    def forget(self, key: Key) -> None:
        self._suspects.pop(key, None)
        self._bodies.pop(key, None)
        self._turns.pop(key, None)
        self._wakeups.pop(key, None)
        self._generations.pop(key, None)
        self._failures.pop(key, None)
        self._kicked.pop(key, None)
        for kind in CHILD_KINDS:
            self._written.pop((kind, *key), None)
        self.reconciler.forget(key)


def delivered(seen: str | None, before: str | None, written: str | None) -> bool:
    """Whether the watch, now showing version `seen` of a child, has delivered our write (it
    replaced `before` and made `written`), or something after it.

    Versions are etcd's revisions on every API server we know: compared as numbers when they
    are, the watch is past our write once it shows `written` or later (another writer's
    status update of the version before ours is not). Otherwise, only that it no longer
    shows the version our write replaced."""
    if seen is not None and written is not None and seen.isdigit() and written.isdigit():
        return int(seen) >= int(written)
    return seen != before


def _packed(body: Mapping[str, Any], *, status: bool = True) -> PackedObject:
    """A child for the index: the object as the watch delivered it, without `managedFields`
    (and without its status when nothing reads it), as JSON text (`compact`): packed on the
    event loop, where compressing would hand the GIL to the reconcile threads."""
    return PackedObject(lean(body, status=status), compress=False)


class PackedPod(PackedObject):
    """A pod for the index (its status left out: the judge reads its spec and metadata), with
    its uid readable unpacked."""

    __slots__ = ("uid",)

    def __init__(self, obj: Mapping[str, Any]) -> None:
        super().__init__(lean(obj, status=False), compress=False)
        self.uid = str((obj.get("metadata") or {}).get("uid"))


def _older(meta: Mapping[str, Any], started: float) -> bool:
    """Whether an object was created before `started` (or its creation time is unreadable)."""
    try:
        created = datetime.fromisoformat(str(meta.get("creationTimestamp")))
    except ValueError:
        return True
    return created.timestamp() <= started


# What a reconcile wrote, as the daemon keeps it: (kind, name, the resourceVersion the write
# replaced or None, the object written, packed).
Written = tuple[tuple[str, str, str | None, PackedObject], ...]


# The WebApp's pods to judge, packed, as the daemon reads them.
PackedPods = tuple[PackedPod, ...]


def reconcile_packed(
    reconciler: Reconciler,
    body: Mapping[str, Any],
    children: Mapping[str, PackedObject | None],
    pods: PackedPods = (),
) -> tuple[Outcome, Written]:
    """`Reconciler.reconcile` over packed children, in the reconcile's thread: the children
    are unpacked here and what it wrote comes back packed, so the event loop neither decodes
    nor encodes, and the daemon holds no unpacked object while it waits."""
    entered = time.monotonic()
    unpacked_children = {
        kind: None if obj is None else obj.unpack() for kind, obj in children.items()
    }
    unpacked_pods = tuple(pod.unpack() for pod in pods)
    unpacked = time.monotonic()
    outcome = reconciler.reconcile(body, unpacked_children, unpacked_pods)
    for change in outcome.changes:
        if change.request is not None:
            # The thread's own stages: when it began (the executor's hand-over) and when its
            # inputs were decoded.
            change.request.update(thread=entered, unpacked=unpacked)
    written = tuple(
        (kind, str(obj["metadata"]["name"]), before, PackedObject(lean(obj)))
        for kind, before, obj in outcome.written
    )
    return replace(outcome, written=()), written


# The stages of a correction, in the order they happen (`Change.request`, plus the daemon's).
STAGE_STAMPS = (
    "kick",  # the watch event handled: the WebApp's daemon kicked (event loop)
    "start",  # the daemon's turn: inputs gathered, handed to the executor (event loop)
    "thread",  # the reconcile thread runs
    "unpacked",  # its inputs decoded
    "decided",  # the judge's diff found the drift
    "built",  # the restoring patch built
    "wire",  # headers and body encoded, handed to the connection pool
    "answered",  # the API server's answer read
    "decoded",  # and decoded
)


def _timing(
    kicked: float | None,
    started: float,
    finished: float,
    request: Mapping[str, float] | None = None,
) -> str:
    """The heal's stages, in milliseconds: the event's arrival to the reconcile's start (the
    event loop and the reconcile slots), the start to the correction's request (the thread's
    hand-over, reading the cache, the judge's diff, building the patch), the request's round
    trip (the client and the API server), and the whole reconcile; then every stage's
    `time.monotonic()` (one clock for every process of the machine, so a benchmark can put
    them on its own timeline)."""
    parts = []
    if kicked is not None:
        parts.append(f"woken {(started - kicked) * 1000:.1f} ms after the event")
    if request is not None and "wire" in request and "answered" in request:
        sent, answered = request["wire"], request["answered"]
        parts.append(f"request sent {(sent - started) * 1000:.1f} ms after waking")
        parts.append(f"answered in {(answered - sent) * 1000:.1f} ms")
    parts.append(f"reconcile {(finished - started) * 1000:.1f} ms")
    text = ", ".join(parts)
    if request is not None:
        stamps = {"kick": kicked, "start": started, **request}
        text += "; stages " + " ".join(
            f"{name}={stamps[name]:.6f}" for name in STAGE_STAMPS if stamps.get(name) is not None
        )
        text += f" new_connections={int(request.get('new_connections', 0))}"
    return text


def _report(
    body: kopf.Body,
    key: Key,
    changes: Sequence[Change],
    times: tuple[float | None, float, float],
) -> None:
    """A log line per change, with its stages (`_timing` of `times`: when the event arrived,
    when the work on it started and ended), and the Events of the changes, one per reason
    (`event_messages`), on the WebApp `body`."""
    for change in changes:
        timing = _timing(*times, change.request)
        log.info("%s/%s %s: %s (%s)", *key, change.reason, change.message, timing)
    for reason, message in event_messages(changes):
        kopf.event(body, type="Normal", reason=reason, message=message)


def _first(index: Any, key: Key) -> PackedObject | None:
    try:
        store = index[key]
    except KeyError:
        return None
    return next(iter(store), None)


def _pods(key: Key, pods: Any, suspects: frozenset[str]) -> PackedPods:
    """The WebApp's pods to judge (`suspects`), from the pod index."""
    if not suspects:
        return ()
    try:
        found = pods[key]
    except KeyError:
        return ()
    return tuple(pod for pod in found if pod.uid in suspects)


def _snapshot(body: Mapping[str, Any]) -> dict[str, Any]:
    """The object as the last watch event delivered it (kopf replaces, never mutates, the
    nested data of an event, so a shallow copy is a consistent snapshot)."""
    return dict(body)


def owner_key(child: Mapping[str, Any]) -> Key | None:
    """The WebApp whose reconcile a Deployment/Service event wakes (`owning_webapp`)."""
    namespace = (child.get("metadata") or {}).get("namespace")
    owner = owning_webapp(child)
    return (namespace, owner.name) if namespace and owner is not None else None


async def _idle(wakeup: asyncio.Event, stopped: kopf.DaemonStopped, timeout: float) -> None:
    """Sleep until a kick, the resync period, or the daemon's stop, whichever comes first."""
    waiters = {
        asyncio.ensure_future(wakeup.wait()),
        asyncio.ensure_future(stopped.wait()),
    }
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()


def pod_owner_key(pod: Mapping[str, Any]) -> Key | None:
    """The WebApp of a pod: the operator's labels on it (the watch selects only those)."""
    meta = pod.get("metadata") or {}
    instance = (meta.get("labels") or {}).get(INSTANCE_LABEL)
    namespace = meta.get("namespace")
    return (namespace, str(instance)) if namespace and instance else None


def _key(namespace: str | None, name: str) -> Key:
    """WebApps are namespaced: kopf always passes a namespace for them."""
    if namespace is None:
        raise kopf.PermanentError(f"{KIND} {name} has no namespace")
    return (namespace, name)


def _is_child(body: Mapping[str, Any], **_: Any) -> bool:
    return owner_key(body) is not None


def register(
    registry: kopf.OperatorRegistry,
    controller: Controller,
    configuration: client.Configuration,
    *,
    reconcile: bool = True,
    webhooks: bool = True,
    connections: int = 0,
) -> None:
    """Attach the handlers to `registry` (explicit, so tests and runs never share state).

    `reconcile`: the reconcile daemon, the event kicks and the finalizer (the leader's job).
    `webhooks`: the admission handlers (kopf refuses to run them without a webhook server;
    the CRD schema and CEL rules apply regardless).
    `connections`: the most connections kopf's session may hold (`kube.kopf_connection_limit`;
    0: no bound).
    """

    @kopf.on.login(id="login", registry=registry)
    async def login(**_: Any) -> kopf.AiohttpSession:
        return kopf_session(connection_info(configuration), connections)

    if reconcile:
        _register_reconcile(registry, controller)
        if controller.healer is not None:
            _register_healer(registry, controller.healer)
    if webhooks:
        _register_webhooks(registry)


def _register_reconcile(registry: kopf.OperatorRegistry, controller: Controller) -> None:

    # The children, cached from the (label-selected) watches: what reconciles read. Async, so
    # kopf runs them in the event loop as events arrive, never queued behind reconcile threads.
    @kopf.index("apps", "v1", "deployments", id="deployments", registry=registry)
    async def deployments(body: kopf.Body, namespace: str | None, name: str, **_: Any) -> Any:
        return {(namespace, name): _packed(body)}

    @kopf.index("v1", "services", id="services", registry=registry)
    async def services(body: kopf.Body, namespace: str | None, name: str, **_: Any) -> Any:
        return {(namespace, name): _packed(body)}

    # The pods (to judge against their ReplicaSet's template, read when one is judged), from
    # the same label-selected watch: the pod template carries the operator's labels.
    @kopf.index("v1", "pods", id="pods", registry=registry)
    async def pods(body: kopf.Body, **_: Any) -> Any:
        key = pod_owner_key(body)
        return None if key is None else {key: PackedPod(body)}

    @kopf.daemon(
        API_GROUP,
        API_VERSION,
        PLURAL,
        id="reconcile",
        registry=registry,
        # On deletion or shutdown kopf raises `stopped`; a daemon still busy after a second
        # (a reconcile in flight) is cancelled, and given this long to go.
        cancellation_backoff=1.0,
        cancellation_timeout=REQUEST_TIMEOUT_S,
    )
    async def reconcile(
        body: kopf.Body,
        namespace: str | None,
        name: str,
        stopped: kopf.DaemonStopped,
        **kwargs: Any,
    ) -> None:
        key = namespace, name = _key(namespace, name)
        # kopf passes every index to every handler, by the index's id.
        indices = {"Deployment": kwargs["deployments"], "Service": kwargs["services"]}
        wakeup = controller.wakeup(key)
        controller.live(key, body)
        loop = asyncio.get_running_loop()
        try:
            while not stopped:
                async with controller.slot(), controller.turn(key):
                    # Cleared once the turn has come: a kick while waiting for it is covered
                    # by the snapshot taken now.
                    wakeup.clear()
                    kicked = controller.woken(key)
                    started = time.monotonic()
                    children = {
                        kind: controller.child(kind, namespace, name, index)
                        for kind, index in indices.items()
                    }
                    suspects = controller.suspects(key)
                    pods = _pods(key, kwargs["pods"], suspects)
                    outcome, written = await loop.run_in_executor(
                        controller.executor,
                        reconcile_packed,
                        controller.reconciler,
                        _snapshot(body),
                        children,
                        pods,
                    )
                    finished = time.monotonic()
                    del children, pods  # packed: not kept while the daemon waits
                if not outcome.found:
                    return
                controller.attempted(key, outcome.generation)
                controller.judged(key, suspects, outcome.pods_left)
                controller.wrote(namespace, written)
                controller.counters.reconciles += 1
                controller.counters.changes += len(outcome.changes)
                # How long each heal took inside the operator: from the event's arrival to
                # the reconcile's start, and the reconcile (its API calls included).
                _report(body, key, outcome.changes, (kicked, started, finished))
                wait = controller.resync_seconds
                if outcome.failure is not None and outcome.failure.reason == NOT_LEADING:
                    return  # deposed: the process is stopping; nothing to report or retry
                if outcome.failure is not None:
                    controller.counters.failures += 1
                    failure = outcome.failure
                    log.warning("%s/%s %s: %s", namespace, name, failure.reason, failure.message)
                    kopf.event(body, type="Warning", reason=failure.reason, message=failure.message)
                    if outcome.retry:
                        wait = controller.failed(key)
                else:
                    controller.succeeded(key)
                if outcome.requeue_after is not None:
                    wait = min(wait, outcome.requeue_after)
                # A kick (a child's event, a spec change) ends the wait early, backoff or not.
                await _idle(wakeup, stopped, wait)
        finally:
            # Stopped for good (deletion, shutdown) or returned: nothing kept for this WebApp.
            controller.forget(key)

    @kopf.on.event(API_GROUP, API_VERSION, PLURAL, id="webapp-event", registry=registry)
    async def webapp_event(namespace: str | None, name: str, meta: kopf.Meta, **_: Any) -> None:
        controller.spec_seen(_key(namespace, name), meta.get("generation") or 0)

    @kopf.on.event("apps", "v1", "deployments", id="child-event", when=_is_child, registry=registry)
    @kopf.on.event("v1", "services", id="child-event", when=_is_child, registry=registry)
    async def child_event(body: kopf.Body, type: str | None, **_: Any) -> None:
        # A change (not the initial listing, not a deletion) may be healed at once; the
        # patch's own event then wakes the reconcile.
        if type == "MODIFIED" and await controller.heal_hot(body):
            return
        controller.kick(owner_key(body))

    @kopf.on.event("v1", "pods", id="pod-event", registry=registry)
    async def pod_event(body: kopf.Body, type: str | None, **_: Any) -> None:
        controller.pod_seen(body, deleted=type == "DELETED")

    @kopf.on.delete(API_GROUP, API_VERSION, PLURAL, id="cleanup", registry=registry)
    def cleanup(body: kopf.Body, namespace: str | None, name: str, retry: int, **_: Any) -> None:
        namespace, name = _key(namespace, name)
        try:
            removed = controller.reconciler.cleanup(namespace, name, body["metadata"]["uid"])
        except ReconcileError as exc:
            kopf.event(body, type="Warning", reason=exc.reason, message=exc.message)
            delay = controller.backoff.delay(retry + 1)
            raise kopf.TemporaryError(exc.message, delay=delay) from None
        controller.forget((namespace, name))
        what = "removed its registry entry" if removed else "no registry entry to remove"
        kopf.event(body, type="Normal", reason="CleanedUp", message=f"{namespace}/{name}: {what}")


def _register_healer(registry: kopf.OperatorRegistry, healer: Healer) -> None:
    # Its connection opened at start-up and kept open; closed with the operator.
    @kopf.on.startup(id="hot-heal-start", registry=registry)
    async def start_healer(**_: Any) -> None:
        await healer.start()

    @kopf.on.cleanup(id="hot-heal-stop", registry=registry)
    async def stop_healer(**_: Any) -> None:
        await healer.close()


def _register_webhooks(registry: kopf.OperatorRegistry) -> None:
    # Async (pure and fast): answered on the event loop, never queued behind reconcile
    # threads, so the API server's 5 s call cannot time out while the operator is busy.
    @kopf.on.validate(
        API_GROUP,
        API_VERSION,
        PLURAL,
        id=WEBHOOK_ID,
        operations=["CREATE", "UPDATE"],
        registry=registry,
    )
    async def validate(
        spec: kopf.Spec,
        namespace: str | None,
        name: str,
        operation: str | None = None,
        old: Any = None,
        new: Any = None,
        **_: Any,
    ) -> None:
        # Only a changed spec is judged: an object admitted under an older policy must still
        # accept metadata writes (kopf's finalizer, labels) so it can be deleted.
        if operation == "UPDATE" and (old or {}).get("spec") == (new or {}).get("spec"):
            return
        problems = admission_problems(spec)
        if problems:
            raise kopf.AdmissionError(f"{KIND} {namespace}/{name}: {'; '.join(problems)}", code=422)

    @kopf.on.validate(
        API_GROUP,
        API_VERSION,
        PLURAL,
        id=SCALE_WEBHOOK_ID,
        subresource="scale",
        operations=["UPDATE"],
        registry=registry,
    )
    async def validate_scale(body: kopf.Body, namespace: str | None, name: str, **_: Any) -> None:
        problems = scale_problems((body.get("spec") or {}).get("replicas"))
        if problems:
            raise kopf.AdmissionError(f"{KIND} {namespace}/{name}: {'; '.join(problems)}", code=422)
