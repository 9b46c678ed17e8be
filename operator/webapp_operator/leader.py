"""Leader election on a coordination.k8s.io Lease, with client-go's semantics, and no split brain.

Only the leader runs kopf (watches, reconciles, webhook); the other replicas wait. A candidate
takes the Lease when it is free (released, or absent) or when the holder has not renewed it
for a full lease duration. Expiry is judged on the candidate's own clock, from the moment it
last saw the Lease change (client-go's `observedTime`), so clock skew between machines cannot
cut a lease short. Every write is a compare-and-swap on resourceVersion: two candidates can
never both win.

The leader renews every retry period and stops leading, on its monotonic clock:

  * when the renew deadline has passed since the *start* of its last successful renewal. A
    renewal that hangs cannot extend leadership: each attempt is abandoned at the deadline,
    whatever its request is doing (and every Lease request carries a timeout of its own);
  * at once when it reads another holder on the Lease.

Why that is enough: a standby takes over no sooner than a lease duration after it *saw* the
leader's last renewal, and the server applied that renewal after the leader started it. So
the leader stops at least `duration - renew_deadline` before any successor can lead. Stopping
is synchronous: `leading` turns False and the `FencedApiClient` the reconciles use refuses
every request from that instant, even from reconciles already running in threads.

A graceful stop releases the Lease (holder cleared, duration 1 s) so that a restarted replica
leads at once; the manager does that only once in-flight reconciles have finished.

kubernetes.leaderelection (the client's own elector) cannot release on shutdown and is not
asyncio-friendly; this small elector is: it acquires on the event loop and renews on a thread
of its own (a busy event loop must not cost the Lease).
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

import urllib3
from kubernetes import client

from compare.judge.rest import request, resource_path
from webapp_operator.names import FIELD_MANAGER

__all__ = [
    "FencedApiClient",
    "LeaderElector",
    "LeaseConfig",
    "NotLeading",
    "Outcome",
    "default_request_timeout",
    "finish_in_flight",
    "lease_expired",
    "renew_delay",
    "step_down",
]

logger = logging.getLogger("webapp_operator.leader")

MIN_REQUEST_TIMEOUT_S = 1.0
RELEASE_ATTEMPTS = 3


def default_request_timeout(renew_deadline: float) -> float:
    """The timeout of one Lease request: half the renew deadline (client-go's choice, so that
    a hung call leaves time for another attempt), at least 1 s, never above the deadline."""
    return min(renew_deadline, max(MIN_REQUEST_TIMEOUT_S, renew_deadline / 2))


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    duration: float = 15.0  # a standby takes over this long after the last renewal it saw
    renew_deadline: float = 10.0  # the leader stops leading after failing to renew this long
    retry_period: float = 2.0  # how often candidates try and the leader renews
    request_timeout: float = 0.0  # per Lease request; 0: default_request_timeout(renew_deadline)

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.duration:
            raise ValueError(
                "lease timings need 0 < retry period < renew deadline < duration "
                f"(got {self.retry_period}, {self.renew_deadline}, {self.duration})"
            )
        if not self.request_timeout:
            object.__setattr__(
                self, "request_timeout", default_request_timeout(self.renew_deadline)
            )
        if not 0 < self.request_timeout <= self.renew_deadline:
            raise ValueError(
                "the Lease request timeout must be within the renew deadline "
                f"(got {self.request_timeout}, deadline {self.renew_deadline})"
            )


# -- the timing rules, pure ------------------------------------------------------------------


def lease_expired(now: float, observed_at: float, duration: float) -> bool:
    """A candidate's view: the holder has not changed the Lease for a full duration."""
    return now - observed_at >= duration


def renew_delay(now: float, deadline: float, retry_period: float) -> float:
    """How long the leader sleeps before its next renewal: one retry period, but never past
    its deadline (it must wake up to stop leading in time)."""
    return max(0.0, min(retry_period, deadline - now))


class Outcome(enum.Enum):
    HELD = "held"  # we hold the Lease now (created, taken, or renewed)
    TAKEN = "taken"  # another holder's Lease, still valid
    CONFLICT = "conflict"  # a concurrent write won the compare-and-swap


# An unreachable API server is as transient as an error status.
_TRANSIENT = (client.ApiException, urllib3.exceptions.HTTPError, OSError)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, client.ApiException):
        return f"{exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class NotLeading(ConnectionError):
    """A request refused because this replica no longer leads. An OSError, so reconcile code
    handles it as an unreachable API server (which, for a deposed leader, it is)."""


class _FencedPool:
    """The client's urllib3 pool, refusing every request while `allowed()` is False. Fenced
    here, below both the typed calls and the requests by path (`compare.judge.rest`), the
    one place every request of the client passes whatever the client's version."""

    def __init__(self, pool: Any, allowed: Callable[[], bool]) -> None:
        self._pool = pool
        self._allowed = allowed

    def request(self, method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        if not self._allowed():
            raise NotLeading(f"not leading: {method} {urlsplit(url).path} refused")
        return self._pool.request(method, url, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._pool, name)


class FencedApiClient(client.ApiClient):  # type: ignore[misc]  # the client is untyped
    """An ApiClient that sends nothing unless `allowed()` holds at the moment of the request.

    The reconciles' client: checked per request, so a reconcile running in a thread when
    leadership ends gets `NotLeading` on its next call instead of writing on."""

    def __init__(self, configuration: client.Configuration, allowed: Callable[[], bool]) -> None:
        super().__init__(configuration)
        self.rest_client.pool_manager = _FencedPool(self.rest_client.pool_manager, allowed)


class LeaderElector:
    """Acquire, hold and release one Lease.

    Times are `time.monotonic()` values: `acquired_at` is the start of the winning attempt
    (the earliest the server can have recorded us), `renewed_at` the start of the last
    successful attempt, `lost_at` when this replica stopped leading without releasing."""

    def __init__(self, api: client.ApiClient, config: LeaseConfig) -> None:
        # Requests by path (`compare.judge.rest`): no typed class, no generated models.
        self._api = api
        self.config = config
        self._leading = threading.Event()
        # What we last saw of the Lease, and when (monotonic): the basis of expiry.
        self._observed_version: str | None = None
        self._observed_at = 0.0
        self.acquired_at: float | None = None
        self.renewed_at = 0.0
        self.lost_at: float | None = None
        self.lost_reason = ""
        # By when the process must have stopped writing by other means than the fence
        # (kopf's own requests): halfway between losing and the earliest takeover.
        self.abandon_by = 0.0

    @property
    def leading(self) -> bool:
        return self._leading.is_set()

    def is_leading(self) -> bool:
        """The fence: True only while this replica leads (thread-safe, for FencedApiClient)."""
        return self._leading.is_set()

    @property
    def renew_deadline_at(self) -> float:
        return self.renewed_at + self.config.renew_deadline

    # -- one attempt ------------------------------------------------------------------------

    def _read(self) -> dict[str, Any] | None:
        try:
            return request(
                self._api, "GET", self._path(self.config.name), timeout=self.config.request_timeout
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    def _spec(self, previous: dict[str, Any] | None) -> dict[str, Any]:
        now = _micro_time(datetime.now(UTC))
        renewing = previous is not None and previous.get("holderIdentity") == self.config.identity
        transitions = (previous or {}).get("leaseTransitions") or 0
        return {
            "holderIdentity": self.config.identity,
            "leaseDurationSeconds": max(1, round(self.config.duration)),
            "acquireTime": (previous or {}).get("acquireTime") if renewing else now,
            "renewTime": now,
            "leaseTransitions": transitions if renewing or previous is None else transitions + 1,
        }

    def attempt(self, *, renew: bool = False) -> Outcome:
        """One compare-and-swap attempt (blocking): acquire, take over, or (`renew`) renew.

        A renewal never takes the Lease back from another holder, and writes nothing once
        leadership has ended meanwhile (an attempt abandoned at the deadline may still run)."""
        lease = self._read()
        if renew and not self.leading:
            return Outcome.CONFLICT
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": self._spec(None),
            }
            # 409: another candidate created it first.
            return Outcome.HELD if self._write("create", body) else Outcome.CONFLICT

        version = lease["metadata"]["resourceVersion"]
        if version != self._observed_version:
            self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        duration = spec.get("leaseDurationSeconds") or self.config.duration
        # A renewal never takes the Lease back from another holder: it lost it.
        others = holder and holder != self.config.identity
        if others and (renew or not lease_expired(time.monotonic(), self._observed_at, duration)):
            return Outcome.TAKEN
        lease["spec"] = self._spec(spec)
        if renew and not self.leading:
            return Outcome.CONFLICT
        if not self._write("replace", lease):  # 409: someone wrote it since we read it
            return Outcome.CONFLICT
        if holder != self.config.identity:
            logger.info("took the lease from %s", holder or "nobody (it was free)")
        return Outcome.HELD

    def try_acquire_or_renew(self) -> bool:
        """One attempt; True when we hold the Lease afterwards."""
        return self.attempt() is Outcome.HELD

    def _observe(self, lease: dict[str, Any]) -> None:
        self._observed_version = lease["metadata"]["resourceVersion"]
        self._observed_at = time.monotonic()

    @property
    def observed_version(self) -> str | None:
        """The Lease's resourceVersion as this replica last read or wrote it."""
        return self._observed_version

    # -- leading and not leading -----------------------------------------------------------

    def _start_leading(self, attempt_started: float) -> None:
        self.acquired_at = self.renewed_at = attempt_started
        self.lost_at = None
        self._leading.set()

    def stop_leading(self, reason: str, *, successor: bool = False) -> None:
        """Stop at once, without touching the Lease (it expires, or is another's already).

        From here `is_leading()` is False, so the FencedApiClient refuses every request."""
        if not self._leading.is_set():
            return
        self._leading.clear()
        self.lost_at = time.monotonic()
        self.lost_reason = reason
        takeover = self.renewed_at + self.config.duration  # the earliest a successor leads
        self.abandon_by = (
            self.lost_at if successor else self.lost_at + max(0.0, takeover - self.lost_at) / 2
        )
        logger.error("stopped leading: %s", reason)

    # -- loops -----------------------------------------------------------------------------

    async def acquire(self, stop: asyncio.Event) -> bool:
        """Wait until this replica leads (True) or `stop` is set (False)."""
        logger.info(
            "waiting for the lease %s/%s as %s",
            self.config.namespace,
            self.config.name,
            self.config.identity,
        )
        while not stop.is_set():
            started = time.monotonic()
            try:
                if await asyncio.to_thread(self.attempt) is Outcome.HELD:
                    self._start_leading(started)
                    logger.info("leading (lease %s)", self.config.name)
                    return True
            except _TRANSIENT as exc:
                logger.warning("lease attempt failed: %s", _describe(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.config.retry_period)
        return False

    async def hold(self) -> None:
        """Renew until leadership ends (returns, `leading` is then False) or cancelled.

        The renewals run on a thread of their own, as client-go's run in a goroutine of their
        own: the event loop also runs kopf, whose start-up and bursts of events can keep it
        busy for seconds on a loaded machine, and that must not cost the Lease. Start this
        task before kopf's, so that its thread runs from the first moment of leadership."""
        loop = asyncio.get_running_loop()
        ended: asyncio.Future[None] = loop.create_future()
        halt = threading.Event()

        def settle(failure: BaseException | None) -> None:
            if ended.done():  # hold() was cancelled meanwhile
                return
            if failure is None:
                ended.set_result(None)
            else:
                ended.set_exception(failure)

        def renew() -> None:
            failure: BaseException | None = None
            try:
                self._renew_until(halt)
            except Exception as exc:  # a bug, not a lost Lease: hold() fails with it
                failure = exc
            with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits
                loop.call_soon_threadsafe(settle, failure)

        threading.Thread(target=renew, name="lease-renewal", daemon=True).start()
        try:
            await ended
        finally:
            halt.set()  # cancelled: the thread starts no further renewal

    def _renew_until(self, halt: threading.Event) -> None:
        """The renewal loop (blocking): returns once leadership ended, or when `halt` is set."""
        # One worker: an attempt runs in it so that the loop can give up on the attempt at
        # the deadline, whatever its request is doing (a request cannot be interrupted).
        requests = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lease-request")
        try:
            while self.leading:
                deadline = self.renew_deadline_at
                delay = renew_delay(time.monotonic(), deadline, self.config.retry_period)
                if halt.wait(delay):
                    return
                started = time.monotonic()
                if started >= deadline:
                    self.stop_leading(f"not renewed for {self.config.renew_deadline:g}s")
                    return
                attempt = requests.submit(self.attempt, renew=True)
                finished, _ = futures_wait([attempt], timeout=deadline - started)
                if halt.is_set():  # hold() was cancelled meanwhile (a graceful stop)
                    return
                if not finished:
                    # The thread may go on; leadership does not.
                    self.stop_leading(
                        f"renewal still unanswered at the renew deadline "
                        f"({self.config.renew_deadline:g}s)"
                    )
                    return
                try:
                    outcome = attempt.result()
                except _TRANSIENT as exc:
                    logger.warning("lease renewal failed: %s", _describe(exc))
                    continue
                if outcome is Outcome.HELD:
                    self.renewed_at = started
                elif outcome is Outcome.TAKEN:
                    self.stop_leading("the lease names another holder", successor=True)
                    return
        finally:
            requests.shutdown(wait=False)

    def release(self) -> bool:
        """Hand the Lease back (graceful shutdown); True when released. Stops leading first.

        A renewal that was already on its way may land between our read and our write: the
        compare-and-swap then fails, and we read again (a few times) while the Lease is ours."""
        if not self.leading:
            return False
        self._leading.clear()
        try:
            for _ in range(RELEASE_ATTEMPTS):
                released = self._release_once()
                if released is None:
                    logger.warning("not releasing the lease: it is no longer ours")
                    return False
                if released:
                    logger.info("released the lease %s", self.config.name)
                    return True
        except _TRANSIENT as exc:
            logger.warning("could not release the lease: %s", _describe(exc))
        return False

    def _release_once(self) -> bool | None:
        """True: released; False: a concurrent write won, try again; None: not ours."""
        lease = self._read()
        if lease is None or (lease.get("spec") or {}).get("holderIdentity") != (
            self.config.identity
        ):
            return None
        now = _micro_time(datetime.now(UTC))
        lease["spec"].update({"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": now})
        return self._write("replace", lease)

    def _write(self, verb: str, lease: dict[str, Any]) -> bool:
        """Create or replace the Lease (a compare-and-swap on resourceVersion); False when
        another writer won (409). What was written becomes what we last saw."""
        creating = verb == "create"
        method, path = ("POST", self._path()) if creating else ("PUT", self._path(self.config.name))
        try:
            written = request(
                self._api,
                method,
                path,
                query={"fieldManager": FIELD_MANAGER},
                body=lease,
                timeout=self.config.request_timeout,
            )
        except client.ApiException as exc:
            if exc.status == 409:
                return False
            raise
        self._observe(written)
        return True

    def _path(self, name: str | None = None) -> str:
        return resource_path("coordination.k8s.io/v1", "leases", self.config.namespace, name)


# -- the graceful end ------------------------------------------------------------------------


async def finish_in_flight(executor: ThreadPoolExecutor, timeout: float) -> bool:
    """Drop queued work and wait up to `timeout` s for the work already running in `executor`
    (reconciles are synchronous: a cancelled kopf daemon leaves its thread running). True when
    nothing runs any more."""
    executor.shutdown(wait=False, cancel_futures=True)
    joined = asyncio.ensure_future(asyncio.to_thread(executor.shutdown, wait=True))
    done, _ = await asyncio.wait({joined}, timeout=max(0.0, timeout))
    return joined in done


async def step_down(
    elector: LeaderElector,
    executor: ThreadPoolExecutor,
    renewing: asyncio.Task[Any],
    grace: float,
) -> bool:
    """The graceful end of leadership, once kopf has stopped: reconciles still running finish
    (at most `grace` s) while `renewing` keeps the Lease, and only then is the Lease released.
    Work that overruns `grace` is fenced off instead and the Lease left to expire: a successor
    must not start while this replica may still write. True when the Lease was released."""
    drained = asyncio.ensure_future(finish_in_flight(executor, grace))
    await asyncio.wait({drained, renewing}, return_when=asyncio.FIRST_COMPLETED)
    lost = renewing.done()  # hold() returned: leadership ended (the fence is closed)
    renewing.cancel()
    if lost:
        drained.cancel()
    if lost or not await drained:
        elector.stop_leading(
            "lost the lease while stopping"
            if lost
            else f"reconciles still running after {grace:g}s: leaving the lease to expire"
        )
        return False
    return await asyncio.to_thread(elector.release)
