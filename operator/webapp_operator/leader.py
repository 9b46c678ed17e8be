"""Leader election on a coordination.k8s.io Lease, with client-go's semantics.

Only the leader runs kopf (watches, reconciles, webhook); the other replicas wait. A candidate
takes the Lease when it is free (released, or absent) or when the holder has not renewed it
for a full lease duration. Expiry is judged on the candidate's own clock, from the moment it
last saw the Lease change (client-go's `observedTime`), so clock skew between machines cannot
cut a lease short. Every write is a compare-and-swap on resourceVersion: two candidates can
never both win. The leader renews every retry period; failing to renew for the renew deadline
means it lost the lease and must stop. A graceful stop releases the Lease (holder cleared,
duration 1 s) so that a restarted replica leads at once.

kubernetes.leaderelection (the client's own elector) runs threads, cannot release on shutdown
and is not asyncio-friendly; this small loop is.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import urllib3
from kubernetes import client

from webapp_operator.names import FIELD_MANAGER

__all__ = ["LeaderElector", "LeaseConfig"]

logger = logging.getLogger("webapp_operator.leader")


@dataclass(frozen=True)
class LeaseConfig:
    namespace: str
    name: str
    identity: str
    duration: float = 15.0  # a standby takes over this long after the last renewal it saw
    renew_deadline: float = 10.0  # the leader gives up after failing to renew this long
    retry_period: float = 2.0  # how often candidates try and the leader renews

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.duration:
            raise ValueError(
                "lease timings need 0 < retry period < renew deadline < duration "
                f"(got {self.retry_period}, {self.renew_deadline}, {self.duration})"
            )


# An unreachable API server is as transient as an error status.
_TRANSIENT = (client.ApiException, urllib3.exceptions.HTTPError, OSError)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, client.ApiException):
        return f"{exc.status} {exc.reason}"
    return f"{type(exc).__name__}: {exc}"


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    """Acquire, hold and release one Lease."""

    def __init__(self, api: client.ApiClient, config: LeaseConfig) -> None:
        self._leases = client.CoordinationV1Api(api)
        self.config = config
        self.leading = False
        # What we last saw of the Lease, and when (monotonic): the basis of expiry.
        self._observed_version: str | None = None
        self._observed_at = 0.0
        self._last_renewal = 0.0

    # -- one attempt ------------------------------------------------------------------------

    def _read(self) -> dict[str, Any] | None:
        try:
            raw = self._leases.read_namespaced_lease(
                self.config.name, self.config.namespace, _preload_content=False
            )
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise
        lease: dict[str, Any] = json.loads(raw.data)
        return lease

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

    def try_acquire_or_renew(self) -> bool:
        """One compare-and-swap attempt; True when we hold the Lease afterwards."""
        lease = self._read()
        if lease is None:
            body = {
                "apiVersion": "coordination.k8s.io/v1",
                "kind": "Lease",
                "metadata": {"name": self.config.name, "namespace": self.config.namespace},
                "spec": self._spec(None),
            }
            try:
                raw = self._leases.create_namespaced_lease(
                    self.config.namespace,
                    body,
                    field_manager=FIELD_MANAGER,
                    _preload_content=False,
                )
            except client.ApiException as exc:
                if exc.status == 409:  # another candidate created it first
                    return False
                raise
            self._observe(json.loads(raw.data))
            return True

        version = lease["metadata"]["resourceVersion"]
        if version != self._observed_version:
            self._observe(lease)
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity")
        duration = spec.get("leaseDurationSeconds") or self.config.duration
        expired = time.monotonic() - self._observed_at >= duration
        if holder and holder != self.config.identity and not expired:
            return False
        lease["spec"] = self._spec(spec)
        try:
            raw = self._leases.replace_namespaced_lease(
                self.config.name,
                self.config.namespace,
                lease,
                field_manager=FIELD_MANAGER,
                _preload_content=False,
            )
        except client.ApiException as exc:
            if exc.status == 409:  # someone wrote it since we read it
                return False
            raise
        self._observe(json.loads(raw.data))
        if holder != self.config.identity:
            logger.info("took the lease from %s", holder or "nobody (it was free)")
        return True

    def _observe(self, lease: dict[str, Any]) -> None:
        self._observed_version = lease["metadata"]["resourceVersion"]
        self._observed_at = time.monotonic()

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
            try:
                if await asyncio.to_thread(self.try_acquire_or_renew):
                    self.leading = True
                    self._last_renewal = time.monotonic()
                    logger.info("leading (lease %s)", self.config.name)
                    return True
            except _TRANSIENT as exc:
                logger.warning("lease attempt failed: %s", _describe(exc))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), timeout=self.config.retry_period)
        return False

    async def hold(self) -> None:
        """Renew until the lease is lost (returns) or the task is cancelled."""
        while True:
            await asyncio.sleep(self.config.retry_period)
            try:
                renewed = await asyncio.to_thread(self.try_acquire_or_renew)
            except _TRANSIENT as exc:
                logger.warning("lease renewal failed: %s", _describe(exc))
                renewed = False
            if renewed:
                self._last_renewal = time.monotonic()
            elif time.monotonic() - self._last_renewal >= self.config.renew_deadline:
                self.leading = False
                logger.error("lost the lease: not renewed for %.1fs", self.config.renew_deadline)
                return

    def release(self) -> bool:
        """Hand the Lease back (graceful shutdown); True when released."""
        if not self.leading:
            return False
        self.leading = False
        try:
            lease = self._read()
            if lease is None or (lease.get("spec") or {}).get("holderIdentity") != (
                self.config.identity
            ):
                return False
            now = _micro_time(datetime.now(UTC))
            lease["spec"].update(
                {"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": now}
            )
            self._leases.replace_namespaced_lease(
                self.config.name,
                self.config.namespace,
                lease,
                field_manager=FIELD_MANAGER,
                _preload_content=False,
            )
        except _TRANSIENT as exc:
            logger.warning("could not release the lease: %s", _describe(exc))
            return False
        logger.info("released the lease %s", self.config.name)
        return True
