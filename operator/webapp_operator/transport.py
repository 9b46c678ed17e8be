"""The operator's HTTP connections: each request leaves in one write.

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

from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

__all__ = ["OneWriteHTTPConnection", "OneWriteHTTPSConnection", "one_write"]


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
