"""kopf's HTTP session (`webapp_operator.kube.kopf_session`): the operator's credentials, with
a bounded number of connections. kopf's own session has no bound, and in a burst of WebApps
it opened one TLS connection per request in flight (338 within four seconds, +117 MiB RSS).
Against the embedded cluster's API server."""

from __future__ import annotations

import asyncio
import contextlib
import os

from kubernetes import client

from webapp_operator.kube import (
    KOPF_OBSERVERS,
    KOPF_REQUEST_CONNECTIONS,
    WATCHED_RESOURCES,
    connection_info,
    kopf_connection_limit,
    kopf_session,
)

REQUESTS = 60


def test_the_limit_leaves_every_watch_stream_its_connection() -> None:
    cluster_wide = WATCHED_RESOURCES + KOPF_OBSERVERS + KOPF_REQUEST_CONNECTIONS
    assert kopf_connection_limit(()) == cluster_wide
    assert kopf_connection_limit(("a", "b", "c")) == (
        3 * WATCHED_RESOURCES + KOPF_OBSERVERS + KOPF_REQUEST_CONNECTIONS
    )
    # A pattern matches namespaces nobody can count in advance: no bound rather than watch
    # streams waiting for a connection forever.
    assert kopf_connection_limit(("a", "team-*")) == 0
    assert kopf_connection_limit(("team-?",)) == 0


def _sockets() -> int:
    count = 0
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed meanwhile
            count += os.readlink(f"/proc/self/fd/{fd}").startswith("socket:")
    return count


async def _burst(configuration: client.Configuration, namespace: str, limit: int) -> int:
    """REQUESTS GETs in flight at once through the session; the connections it opened (idle
    ones stay open for its keep-alive, so the new sockets count them)."""
    context = kopf_session(connection_info(configuration), limit)
    session = context.aiohttp_session
    before = _sockets()
    url = f"{context.server}/api/v1/namespaces/{namespace}/configmaps"

    async def get() -> int:
        async with session.get(url) as response:
            await response.read()
            return response.status

    try:
        statuses = await asyncio.gather(*(get() for _ in range(REQUESTS)))
        opened = _sockets() - before
    finally:
        await session.close()
    # The operator's credentials (the ServiceAccount's token or the kubeconfig's) are used.
    assert statuses == [200] * REQUESTS
    return opened


def test_the_session_bounds_its_connections(api: client.ApiClient, namespace: str) -> None:
    limit = kopf_connection_limit(())
    bounded = asyncio.run(_burst(api.configuration, namespace, limit))
    assert 0 < bounded <= limit, bounded
    # The same burst without a bound (kopf's own session): a connection per request in flight.
    unbounded = asyncio.run(_burst(api.configuration, namespace, 0))
    assert unbounded > limit, unbounded
