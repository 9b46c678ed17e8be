"""Every request to an API server ends: connect and read timeouts by default, and a total
deadline per request that a server answering a byte at a time cannot stretch.

urllib3's timeouts are per socket operation: a server that sends one byte a second never
trips a 10 s read timeout, and the kubernetes client sets none at all unless a call passes
`_request_timeout`. `bound(api)` fixes both on one `ApiClient`:

- a call without `_request_timeout` gets `DEFAULT_TIMEOUT` (connect, read);
- each request has a total deadline, its timeout's sum (a number: that number). A watchdog
  thread shuts the socket of a request still under way at its deadline, which ends any read
  at once; the request then raises `RequestDeadline`, one line naming the server.

What is bounded: the request and the reading of its whole body, also when the caller reads
the raw answer itself (`_preload_content=False`); a connection leaves its request's deadline
when it returns to the pool. A watch (`watch=true`) is the exception: its headers are bounded,
its events are read as they come, each read within the timeout its caller gave (none: the
server's `timeoutSeconds` ends it) - a quiet watch is not a slow server.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import socket
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

import urllib3
from kubernetes import client
from kubernetes.client import rest

from compare.errors import EXIT_USAGE, CompareError

__all__ = ["DEFAULT_TIMEOUT", "RequestDeadline", "bound", "deadline_of"]

# (connect, read) seconds of a call that names none: its total deadline is their sum.
DEFAULT_TIMEOUT = (5.0, 30.0)


class RequestDeadline(CompareError, urllib3.exceptions.TimeoutError):
    """A request that did not finish within its deadline. A urllib3 timeout for the callers
    that retry on transport failures; a one-line CompareError (exit 2) for those that do not."""

    def __init__(self, server: str, seconds: float) -> None:
        super().__init__(
            f"the API server at {server} sent no complete answer within {seconds:g} s (a"
            " request's deadline: it answers too slowly, or something between slows it)",
            exit_code=EXIT_USAGE,
        )
        self.server = server
        self.seconds = seconds


def deadline_of(timeout: Any) -> float:
    """The total deadline of a request with this timeout (a number, a (connect, read) pair,
    a urllib3 Timeout); None: `DEFAULT_TIMEOUT`'s."""
    if timeout is None:
        timeout = DEFAULT_TIMEOUT
    if isinstance(timeout, urllib3.Timeout):
        if isinstance(timeout.total, int | float):
            return float(timeout.total)
        parts = [timeout.connect_timeout, timeout.read_timeout]
        return sum(
            float(p) if isinstance(p, int | float) else d
            for p, d in zip(parts, DEFAULT_TIMEOUT, strict=True)
        )
    if isinstance(timeout, tuple):
        return float(sum(timeout))
    return float(timeout)


class _Guard:
    """One request's deadline: the connections it used, shut when it passes."""

    def __init__(self, seconds: float, server: str) -> None:
        self.seconds = seconds
        self.server = server
        self.at = time.monotonic() + seconds
        self.expired = False
        self.done = False
        self._connections: list[Any] = []
        self._lock = threading.Lock()

    def attach(self, connection: Any) -> None:
        """Join `connection` to this request; past the deadline (a retry of the request),
        a timeout at once."""
        connection._compare_guard = self
        with self._lock:
            if self.expired:
                raise urllib3.exceptions.TimeoutError("request deadline passed")
            self._connections.append(connection)

    def expire(self) -> None:
        with self._lock:
            if self.done:
                return
            self.expired = True
            for connection in self._connections:
                # Only while it still serves this request: a pooled connection may serve another.
                if getattr(connection, "_compare_guard", None) is self:
                    _shut(connection)

    def disarm(self) -> None:
        with self._lock:
            self.done = True
            self._connections.clear()


def _shut(connection: Any) -> None:
    sock = getattr(connection, "sock", None)
    if sock is None:
        return
    # The plain socket's shutdown (a TLS socket's own would need its lock): any read
    # blocked on it returns at once.
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


# How long the idle watchdog sleeps before it looks again (an `arm` wakes it at once).
IDLE_WAIT_S = 60.0


class _Watchdog:
    """One thread for every guard of the process: expires each at its time."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, _Guard]] = []
        self._count = itertools.count()
        self._wake = threading.Condition()
        self._thread: threading.Thread | None = None

    def arm(self, seconds: float, server: str) -> _Guard:
        guard = _Guard(seconds, server)
        with self._wake:
            heapq.heappush(self._heap, (guard.at, next(self._count), guard))
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="request-deadlines", daemon=True
                )
                self._thread.start()
            if self._heap[0][2] is guard:  # the thread sleeps until an earlier one otherwise
                self._wake.notify()
        return guard

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._heap:
                    # Idle: woken by the next `arm`; the bound only keeps every wait finite.
                    self._wake.wait(IDLE_WAIT_S)
                at, _, guard = self._heap[0]
                now = time.monotonic()
                if guard.done:
                    heapq.heappop(self._heap)
                    continue
                if at > now:
                    self._wake.wait(at - now)
                    continue
                heapq.heappop(self._heap)
            guard.expire()


_WATCHDOG = _Watchdog()
_current = threading.local()


class _GuardedResponse(urllib3.HTTPResponse):
    """An answer whose reading, cut at its request's deadline, says so (`RequestDeadline`)
    rather than as a broken connection - also when the caller reads the raw answer."""

    _compare_guard: _Guard | None = None

    def _passed(self) -> None:
        guard = self._compare_guard
        if guard is not None and guard.expired:
            raise RequestDeadline(guard.server, guard.seconds) from None

    def read(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().read(*args, **kwargs)
        except Exception:
            self._passed()
            raise

    def read_chunked(self, *args: Any, **kwargs: Any) -> Any:
        try:
            yield from super().read_chunked(*args, **kwargs)
        except Exception:
            self._passed()
            raise


class _Guarded:
    """A connection that joins the deadline of the request its thread is making."""

    def request(self, *args: Any, **kwargs: Any) -> Any:
        guard = getattr(_current, "guard", None)
        if guard is not None:
            guard.attach(self)
        return super().request(*args, **kwargs)  # type: ignore[misc]

    def getresponse(self, *args: Any, **kwargs: Any) -> Any:
        response = super().getresponse(*args, **kwargs)  # type: ignore[misc]
        guard = getattr(self, "_compare_guard", None)
        if guard is not None and type(response) is urllib3.HTTPResponse:
            # The same object, told its deadline: urllib3 builds it itself.
            response.__class__ = _GuardedResponse
            response._compare_guard = guard  # type: ignore[attr-defined]
        return response


class _HTTPConnection(_Guarded, urllib3.connection.HTTPConnection):
    pass


class _HTTPSConnection(_Guarded, urllib3.connection.HTTPSConnection):
    pass


class _Released:
    """A pool whose connections leave their request's deadline when they come back (the
    answer read whole, or dropped): a deadline passing later never touches them."""

    def _put_conn(self, conn: Any) -> None:
        if conn is not None:
            conn._compare_guard = None
        super()._put_conn(conn)  # type: ignore[misc]


class _HTTPPool(_Released, urllib3.HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(_Released, urllib3.HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


def _server(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else url


class _BoundedResponse(rest.RESTResponse):  # type: ignore[misc]
    """The client's response, its body read within the request's deadline. Handing out the
    raw response (the caller reads it) keeps the deadline, but for a watch's stream."""

    def __init__(
        self, inner: rest.RESTResponse, guard: _Guard, server: str, *, watch: bool
    ) -> None:
        self._raw = inner.response
        self._guard = guard
        self._server = server
        self._watch = watch
        self.status = inner.status
        self.reason = inner.reason
        self.data = None

    @property  # type: ignore[override]
    def response(self) -> Any:
        if self._watch:
            self._guard.disarm()
        return self._raw

    def read(self) -> Any:
        if self.data is None:
            try:
                self.data = self._raw.data
            except Exception:
                if self._guard.expired:
                    raise RequestDeadline(self._server, self._guard.seconds) from None
                raise
            finally:
                self._guard.disarm()
        return self.data

    @property
    def headers(self) -> Any:
        return self._raw.headers

    def getheaders(self) -> Any:
        return self._raw.headers

    def getheader(self, name: str, default: Any = None) -> Any:
        return self._raw.headers.get(name, default)


def _guarded(call: Callable[[], Any], seconds: float, server: str) -> tuple[Any, _Guard]:
    """Make one request under a new guard (the connections it opens join it)."""
    guard = _WATCHDOG.arm(seconds, server)
    _current.guard = guard
    try:
        return call(), guard
    except Exception:
        guard.disarm()
        if guard.expired:
            raise RequestDeadline(server, seconds) from None
        raise
    finally:
        _current.guard = None


def bound(api: client.ApiClient) -> client.ApiClient:
    """Give every request of `api` default timeouts and a total deadline (see the module's
    docstring); returns `api`."""
    rest_client = api.rest_client
    manager = rest_client.pool_manager
    if type(manager) in (urllib3.PoolManager, urllib3.ProxyManager):
        # A SOCKS proxy's pools are its own: their requests keep the per-read timeouts only.
        manager.pool_classes_by_scheme = {"http": _HTTPPool, "https": _HTTPSPool}
    typed_request = rest_client.request
    pool_request = manager.request

    def request(
        method: str,
        url: str,
        headers: Any = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        watch = "watch=true" in url.partition("?")[2]
        if _request_timeout is None and not watch:
            _request_timeout = DEFAULT_TIMEOUT
        seconds = deadline_of(_request_timeout)
        server = _server(url)
        response, guard = _guarded(
            lambda: typed_request(
                method,
                url,
                headers=headers,
                body=body,
                post_params=post_params,
                _request_timeout=_request_timeout,
            ),
            seconds,
            server,
        )
        return _BoundedResponse(response, guard, server, watch=watch)

    def pool(method: str, url: str, *args: Any, **kwargs: Any) -> Any:
        # A request sent on the pool directly (`compare.judge.rest`); one the typed client
        # makes is under its guard already.
        if getattr(_current, "guard", None) is not None:
            return pool_request(method, url, *args, **kwargs)
        if kwargs.get("timeout") is None:
            kwargs["timeout"] = urllib3.Timeout(connect=DEFAULT_TIMEOUT[0], read=DEFAULT_TIMEOUT[1])
        seconds = deadline_of(kwargs["timeout"])
        server = _server(url)
        response, guard = _guarded(
            lambda: pool_request(method, url, *args, **kwargs), seconds, server
        )
        # Preloaded, the body is read; else the caller reads it within the deadline still.
        if kwargs.get("preload_content", True):
            guard.disarm()
        return response

    rest_client.request = request
    manager.request = pool
    return api
