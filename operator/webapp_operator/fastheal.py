"""A child's drift healed on the event loop as its watch event arrives: the heal's hot path.

The reconcile's way to a correction: the event kicks the WebApp's daemon, which waits for a
turn of the loop and a reconcile slot, hands its packed inputs to a thread that decodes them,
judges them, and sends the patch through the kubernetes client's pool. A drifted Deployment or
Service of a WebApp whose reconcile has nothing pending needs none of that: the watch event is
decoded already, the desired object is cached (one dry-run per generation), and the restoring
patch is one request. `Healer` judges the event and sends that patch from the loop, on an HTTP
session of its own whose one connection stays open; everything else (the status, a
re-creation, a failure and its retry, a spec that moved) is the reconcile's, which the caller
kicks afterwards either way.

The same judgement and the same patch as the reconcile's (`compare.judge`: `diff_object`,
`restoring_patch`), the same field manager, the same fence (a deposed replica sends nothing),
the same request timeout.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

import aiohttp
from kubernetes import client

from compare.errors import first_line
from compare.judge import DesiredObject, diff_object, restoring_patch
from compare.judge.kinds import kind as judged_kind
from compare.judge.rest import headers
from webapp_operator.builders import owning_webapp
from webapp_operator.kube import connection_info
from webapp_operator.names import FIELD_MANAGER
from webapp_operator.reconciler import JSON_PATCH, spec_moved

__all__ = ["KEEPALIVE_S", "Healed", "Healer"]

log = logging.getLogger("webapp_operator.fastheal")

# aiohttp closes a connection idle for 15 s by default; the API server one idle for 90 s.
# Kept open up to 75 s, and a request (`GET /version`) after every `warm_s` without one.
KEEPALIVE_S = 75.0


@dataclass(frozen=True)
class Healed:
    """What the hot path wrote: the child as the API server answered (read-your-writes), the
    fields it restored, and the correction's stages (`time.monotonic()`, as the reconcile's);
    `fields` is empty when the patch left an immutable field differing (the reconcile kicked
    afterwards re-creates the child)."""

    kind: str
    before: str | None  # the resourceVersion the patch replaced
    updated: Mapping[str, Any]
    fields: tuple[str, ...]
    stamps: dict[str, float]


class Healer:
    """Restores a drifted child from its watch event with one JSON patch, on the loop."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        timeout: float,
        allowed: Callable[[], bool] = lambda: True,
        warm_s: float = 30.0,
    ) -> None:
        self._api = api
        self._timeout = aiohttp.ClientTimeout(total=timeout)
        self._allowed = allowed
        self._warm_s = warm_s
        self._session: aiohttp.ClientSession | None = None
        self._warmer: asyncio.Task[None] | None = None
        self._last_sent = 0.0
        self._opened = 0  # connections the session opened (a measurement)
        self.sent = 0

    # -- the hot path ---------------------------------------------------------------------------

    async def heal(
        self, desired: DesiredObject, live: Mapping[str, Any], webapp: Mapping[str, Any]
    ) -> Healed | None:
        """Judge `live` (a child's watch event) against `desired`; when a field drifted, patch
        it back. None when there is nothing for the hot path: no drift, not this WebApp's
        child, a spec that moved (an update, the reconcile's), or the patch failed (the
        reconcile's retry and its Event take it from there)."""
        meta = live.get("metadata") or {}
        owner = owning_webapp(live)
        webapp_meta = webapp["metadata"]
        if (
            meta.get("name") != desired.name
            or meta.get("deletionTimestamp")
            or owner is None
            or owner.name != webapp_meta["name"]
            or owner.uid != webapp_meta["uid"]
        ):
            return None
        kind = desired.kind
        found = diff_object(kind.lower(), desired.defaulted, live, raw=desired.raw)
        if not found or spec_moved(found):
            return None
        stamps = {"decided": time.monotonic()}
        patch = restoring_patch(desired.raw, live)
        stamps["built"] = time.monotonic()
        path = judged_kind(kind).path(str(meta.get("namespace")), desired.name)
        try:
            updated = await self._patch(path, patch, stamps)
        except (aiohttp.ClientError, TimeoutError, OSError, ValueError) as exc:
            log.debug("%s %s: the hot path's patch failed: %s", kind, path, first_line(exc))
            return None
        if updated is None:
            return None
        stamps["decoded"] = time.monotonic()
        # An immutable field the patch could not change (a Service's clusterIP): no
        # correction to report; the reconcile re-creates it.
        left = diff_object(kind.lower(), desired.defaulted, updated, raw=desired.raw)
        fields = () if left else tuple(str(m) for m in found)
        return Healed(kind, meta.get("resourceVersion"), updated, fields, stamps)

    async def _patch(
        self, path: str, patch: Any, stamps: dict[str, float]
    ) -> Mapping[str, Any] | None:
        if not self._allowed():
            return None  # deposed: the fence, as the reconciles' client has it
        session = self._open()
        query = urlencode({"fieldManager": FIELD_MANAGER, "fieldValidation": "Ignore"})
        data = json.dumps(patch, separators=(",", ":")).encode()
        sent_headers = headers(self._api, JSON_PATCH)
        opened = self._opened
        stamps["wire"] = time.monotonic()
        async with session.patch(
            f"{self._api.configuration.host}{path}?{query}", data=data, headers=sent_headers
        ) as response:
            body = await response.read()
            stamps["answered"] = time.monotonic()
            stamps["new_connections"] = float(self._opened - opened)
            self._last_sent = time.monotonic()
            self.sent += 1
            if not 200 <= response.status <= 299:
                log.debug("PATCH %s: %s %r", path, response.status, body[:200])
                return None
        answer = json.loads(body)
        return answer if isinstance(answer, dict) else None

    # -- the connection -------------------------------------------------------------------------

    def _open(self) -> aiohttp.ClientSession:
        """The session, made on first use in the running loop (aiohttp binds it there)."""
        if self._session is None or self._session.closed:
            info = connection_info(self._api.configuration)
            tracing = aiohttp.TraceConfig()
            tracing.on_connection_create_end.append(self._count_connection)
            self._session = aiohttp.ClientSession(
                connector=aiohttp.TCPConnector(
                    limit=4, keepalive_timeout=KEEPALIVE_S, ssl=info.as_ssl_context()
                ),
                timeout=self._timeout,
                trace_configs=[tracing],
            )
        return self._session

    async def _count_connection(self, *_: Any) -> None:
        self._opened += 1

    async def start(self) -> None:
        """Open the connection now and keep it open (a heal after a quiet spell would
        otherwise wait for a TCP and TLS handshake)."""
        if self._warmer is None and self._warm_s > 0:
            self._warmer = asyncio.create_task(self._keep_warm(), name="fastheal-warm")

    async def _keep_warm(self) -> None:
        # Runs until `close` cancels it; each request has its own deadline.
        while True:
            if time.monotonic() - self._last_sent >= self._warm_s and self._allowed():
                try:
                    session = self._open()
                    async with session.get(
                        f"{self._api.configuration.host}/version",
                        headers=headers(self._api, None),
                        timeout=aiohttp.ClientTimeout(total=min(5.0, self._warm_s)),
                    ) as response:
                        await response.read()
                    self._last_sent = time.monotonic()
                except (aiohttp.ClientError, TimeoutError, OSError) as exc:
                    log.debug("keeping the hot path's connection open: %s", first_line(exc))
            await asyncio.sleep(self._warm_s)

    async def close(self) -> None:
        if self._warmer is not None:
            self._warmer.cancel()
            self._warmer = None
        if self._session is not None:
            await self._session.close()
            self._session = None
