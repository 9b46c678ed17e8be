"""The operator's HTTP connections: each request leaves in one write, one is kept open.

urllib3 (under the kubernetes client) sends a request in two writes: the header block, then
the body. Over TLS each write is a record of its own and each is a blocking call that hands
the GIL away; on a busy operator the reconcile thread then waits for the event loop's thread
to give the GIL back (up to the interpreter's 5 ms switch interval) before it can write the
body, while the API server, which has read the headers and started the request, waits for
that body. A restoring patch is a heal on the clock, so the header block is held here and
leaves with the body in one `sendall`: one record, one release of the GIL.

Installed with urllib3's own mechanism: the pool manager's pool class per scheme, whose
`ConnectionCls` is the connection below; nothing else of the client changes (its TLS
settings, its pool sizes, its proxy, its retries).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from compare.errors import first_line
from compare.judge.rest import request

__all__ = ["OneWriteHTTPConnection", "OneWriteHTTPSConnection", "Warmer", "one_write"]

logger = logging.getLogger("webapp_operator.transport")


class _OneWrite:
    """Holds a request's header block until its body is sent, then writes both at once."""

    _holding = False
    _held: bytes | None = None

    def request(self, method: str, url: str, body: Any = None, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "sock", None) is None:
            # Connected first (urllib3 connects a plain connection on its first write): what
            # connecting writes (a proxy's CONNECT) is never held.
            self.connect()  # type: ignore[attr-defined]
        # Only a request with a body sends after its headers; one without leaves as before.
        self._holding = body is not None
        self._held = None
        try:
            result = super().request(method, url, body, *args, **kwargs)  # type: ignore[misc]
            held, self._held = self._held, None
            if held is not None:  # an empty body: nothing came to carry the headers
                super().send(held)  # type: ignore[misc]
            return result
        finally:
            self._holding, self._held = False, None

    def send(self, data: Any) -> None:
        if self._holding and self._held is None:
            self._held = bytes(data)  # the header block (http.client's `_send_output`)
            return
        if self._held is not None:
            data, self._held = self._held + bytes(data), None
        super().send(data)  # type: ignore[misc]


class OneWriteHTTPConnection(_OneWrite, HTTPConnection):
    """urllib3's connection, each request with a body in one write."""


class OneWriteHTTPSConnection(_OneWrite, HTTPSConnection):
    """urllib3's TLS connection, each request with a body in one write (one TLS record)."""


class _OneWriteHTTPPool(HTTPConnectionPool):
    ConnectionCls = OneWriteHTTPConnection


class _OneWriteHTTPSPool(HTTPSConnectionPool):
    ConnectionCls = OneWriteHTTPSConnection


def one_write(manager: urllib3.PoolManager) -> urllib3.PoolManager:
    """`manager` with one-write connections for the pools it makes from now on (before its
    first request: pools already made keep their connections)."""
    manager.pool_classes_by_scheme = {"http": _OneWriteHTTPPool, "https": _OneWriteHTTPSPool}
    return manager


class Warmer:
    """Keeps one of the client's connections open while the operator has nothing to send.

    The API server closes a keep-alive connection idle for 90 s (Go's `IdleTimeout`; measured
    on the embedded cluster: 90.2 s), and a WebApp at rest costs no request at all, so after
    a quiet spell the first heal opened a new TCP and TLS connection before its patch could
    leave (a request on a new connection: 48 ms p50, on an open one 4.8 ms; load 9-14).
    Every `interval` seconds without a request through the client, one `GET /version`
    (readable by every identity) goes out: urllib3 hands back the most
    recently used connection first, so the heal's request gets the one kept open. A busy
    operator sends nothing more.
    """

    def __init__(self, api: Any, interval: float) -> None:
        self._api = api
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.sent = 0

    def _requests(self) -> int:
        """The requests the client's pool for the API server has sent (urllib3's count)."""
        pool = self._api.rest_client.pool_manager.connection_from_url(self._api.configuration.host)
        return int(getattr(pool, "num_requests", 0))

    def start(self) -> None:
        if self.interval <= 0 or self._thread is not None:
            return
        self._thread = threading.Thread(target=self._run, name="keep-warm", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        seen = self._requests()
        while not self._stop.wait(self.interval):
            now = self._requests()
            if now == seen:
                try:
                    request(self._api, "GET", "/version", timeout=min(5.0, self.interval))
                    self.sent += 1
                except Exception as exc:  # never fatal: a cold connection is only slower
                    logger.debug("keeping a connection warm failed: %s", first_line(exc))
                now = self._requests()
            seen = now
