"""The kopf wiring: which events wake which reconcile, and how failures are retried.

kopf is edge-triggered; the operator must be level-triggered. So every WebApp gets one kopf
*daemon* that runs `Reconciler.reconcile` in a loop, one reconcile at a time per WebApp
(controller-runtime's work-queue guarantee). The daemon starts on create and on resume (kopf
spawns it for every existing WebApp at startup) and then sleeps until one of:

  * a kick from `@kopf.on.event` on the WebApp: its spec changed (a new generation);
  * a kick from `@kopf.on.event` on an owned Deployment or Service: ANY event, including
    deletion, so drift is healed as soon as the API server reports it;
  * the resync period (30 s by default, the seed's RequeueAfter).

A failed reconcile raises `kopf.TemporaryError` with a bounded exponential delay, so kopf's own
retry machinery sleeps and restarts the daemon. `@kopf.on.delete` is the finalizer
(example.com/cleanup), `@kopf.on.validate` the admission webhook.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from concurrent.futures import Executor
from dataclasses import dataclass, field
from typing import Any

import kopf
from kubernetes import client

from webapp_operator.admission import admission_problems, scale_problems
from webapp_operator.health import Counters
from webapp_operator.kube import connection_info
from webapp_operator.names import (
    API_GROUP,
    API_GROUP_VERSION,
    API_VERSION,
    INSTANCE_LABEL,
    KIND,
    MANAGED_BY_LABEL,
    OPERATOR_NAME,
    PLURAL,
    SCALE_WEBHOOK_ID,
    WEBHOOK_ID,
)
from webapp_operator.reconciler import REQUEST_TIMEOUT_S, ReconcileError, Reconciler

__all__ = ["Backoff", "Controller", "owner_key", "register"]

log = logging.getLogger("webapp_operator.reconcile")

Key = tuple[str, str]  # (namespace, name) of a WebApp


@dataclass(frozen=True)
class Backoff:
    """Bounded exponential backoff: base, 2*base, 4*base, ... up to cap."""

    base: float = 0.5
    cap: float = 60.0

    def delay(self, failures: int) -> float:
        return float(min(self.cap, self.base * 2 ** max(0, failures - 1)))


@dataclass
class Controller:
    """What the handlers share: the reconciler, one wake-up per WebApp, retry counters."""

    reconciler: Reconciler
    resync_seconds: float = 30.0
    backoff: Backoff = field(default_factory=Backoff)
    counters: Counters = field(default_factory=Counters)
    # The threads reconciles run in (the kubernetes client blocks); shared with kopf's own
    # sync handlers so that one setting bounds the operator's concurrency.
    executor: Executor | None = None
    _wakeups: dict[Key, asyncio.Event] = field(default_factory=dict)
    _generations: dict[Key, int] = field(default_factory=dict)
    _failures: dict[Key, int] = field(default_factory=dict)

    def wakeup(self, key: Key) -> asyncio.Event:
        return self._wakeups.setdefault(key, asyncio.Event())

    def kick(self, key: Key | None) -> None:
        if key is not None and key in self._wakeups:
            self._wakeups[key].set()

    def spec_seen(self, key: Key, generation: int) -> None:
        """A WebApp event: kick only for a new generation (status writes do not bump it)."""
        if self._generations.get(key) != generation:
            self.kick(key)

    def succeeded(self, key: Key, generation: int) -> None:
        self._generations[key] = generation
        self._failures.pop(key, None)

    def failed(self, key: Key) -> float:
        """Count a failure; the delay before the next attempt."""
        self._failures[key] = self._failures.get(key, 0) + 1
        return self.backoff.delay(self._failures[key])

    def forget(self, key: Key) -> None:
        self._wakeups.pop(key, None)
        self._generations.pop(key, None)
        self._failures.pop(key, None)


def owner_key(child: Mapping[str, Any]) -> Key | None:
    """The WebApp a Deployment/Service belongs to: its controller reference, else (when someone
    stripped that) the operator's labels."""
    meta = child.get("metadata") or {}
    namespace = meta.get("namespace")
    if not namespace:
        return None
    for ref in meta.get("ownerReferences") or []:
        is_webapp = ref.get("kind") == KIND and ref.get("apiVersion") == API_GROUP_VERSION
        if ref.get("controller") and is_webapp:
            return (namespace, ref["name"])
    labels = meta.get("labels") or {}
    if labels.get(MANAGED_BY_LABEL) == OPERATOR_NAME and labels.get(INSTANCE_LABEL):
        return (namespace, labels[INSTANCE_LABEL])
    return None


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
) -> None:
    """Attach the handlers to `registry` (explicit, so tests and runs never share state).

    `reconcile`: the reconcile daemon, the event kicks and the finalizer (the leader's job).
    `webhooks`: the admission handlers (kopf refuses to run them without a webhook server;
    the CRD schema and CEL rules apply regardless).
    """

    @kopf.on.login(id="login", registry=registry)
    def login(**_: Any) -> kopf.ConnectionInfo:
        return connection_info(configuration)

    if reconcile:
        _register_reconcile(registry, controller)
    if webhooks:
        _register_webhooks(registry)


def _register_reconcile(registry: kopf.OperatorRegistry, controller: Controller) -> None:

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
        body: kopf.Body, namespace: str | None, name: str, stopped: kopf.DaemonStopped, **_: Any
    ) -> None:
        key = namespace, name = _key(namespace, name)
        wakeup = controller.wakeup(key)
        try:
            while not stopped:
                wakeup.clear()
                outcome = await asyncio.get_running_loop().run_in_executor(
                    controller.executor, controller.reconciler.reconcile, namespace, name
                )
                if not outcome.found:
                    return
                controller.counters.reconciles += 1
                controller.counters.changes += len(outcome.changes)
                for change in outcome.changes:
                    log.info("%s/%s %s: %s", namespace, name, change.reason, change.message)
                    kopf.event(body, type="Normal", reason=change.reason, message=change.message)
                if outcome.failure is not None:
                    controller.counters.failures += 1
                    failure = outcome.failure
                    kopf.event(body, type="Warning", reason=failure.reason, message=failure.message)
                    if outcome.retry:
                        raise kopf.TemporaryError(failure.message, delay=controller.failed(key))
                controller.succeeded(key, outcome.generation)
                await _idle(wakeup, stopped, controller.resync_seconds)
        finally:
            if stopped:
                controller.forget(key)  # stopped for good: deletion or shutdown

    @kopf.on.event(API_GROUP, API_VERSION, PLURAL, id="webapp-event", registry=registry)
    async def webapp_event(namespace: str | None, name: str, meta: kopf.Meta, **_: Any) -> None:
        controller.spec_seen(_key(namespace, name), meta.get("generation") or 0)

    @kopf.on.event("apps", "v1", "deployments", id="child-event", when=_is_child, registry=registry)
    @kopf.on.event("v1", "services", id="child-event", when=_is_child, registry=registry)
    async def child_event(body: kopf.Body, **_: Any) -> None:
        controller.kick(owner_key(body))

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


def _register_webhooks(registry: kopf.OperatorRegistry) -> None:
    @kopf.on.validate(
        API_GROUP,
        API_VERSION,
        PLURAL,
        id=WEBHOOK_ID,
        operations=["CREATE", "UPDATE"],
        registry=registry,
    )
    def validate(
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
    def validate_scale(body: kopf.Body, namespace: str | None, name: str, **_: Any) -> None:
        problems = scale_problems((body.get("spec") or {}).get("replicas"))
        if problems:
            raise kopf.AdmissionError(f"{KIND} {namespace}/{name}: {'; '.join(problems)}", code=422)
