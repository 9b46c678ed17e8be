"""The operator's connection to the API server, kept open while the operator is idle.

The API server closes a keep-alive connection idle for 90 s, so the first heal after a quiet
spell would open a TCP and TLS connection before its patch could leave (`Warmer`).
"""

from __future__ import annotations

import logging
from typing import Any

from compare.errors import first_line
from compare.judge.rest import request
from webapp_operator.periodic import Periodic

__all__ = ["Warmer"]

logger = logging.getLogger("webapp_operator.transport")


class Warmer(Periodic):
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

    name = "keep-warm"

    def __init__(self, api: Any, interval: float) -> None:
        super().__init__(interval)
        self._api = api
        self._seen = 0
        self.sent = 0

    def _requests(self) -> int:
        """The requests the client's pool for the API server has sent (urllib3's count)."""
        pool = self._api.rest_client.pool_manager.connection_from_url(self._api.configuration.host)
        return int(getattr(pool, "num_requests", 0))

    def begin(self) -> None:
        self._seen = self._requests()

    def tick(self) -> bool:
        if self._requests() == self._seen:
            try:
                request(self._api, "GET", "/version", timeout=min(5.0, self.interval))
                self.sent += 1
            except Exception as exc:  # never fatal: a cold connection is only slower
                logger.debug("keeping a connection warm failed: %s", first_line(exc))
        self._seen = self._requests()
        return True
