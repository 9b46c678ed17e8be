"""The operator's connections send each request in one write and one is kept open while
idle (`webapp_operator.transport`), against a real HTTP server on the loopback."""

from __future__ import annotations

import json
import socket
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest
import urllib3
from kubernetes import client

from compare.judge.rest import request
from tests.loopback_http import serving
from webapp_operator.transport import OneWriteHTTPConnection, Warmer, one_write


class _Echo(BaseHTTPRequestHandler):
    """Answers with the method and the body it read; keeps the connection open."""

    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode()
        data = json.dumps({"method": self.command, "body": body}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_PATCH = do_POST = _answer

    def log_message(self, *args: Any) -> None:
        pass


class _CountingSocket:
    """The connection's real socket, counting its writes."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self.writes: list[bytes] = []

    def sendall(self, data: bytes) -> None:
        self.writes.append(bytes(data))
        self._sock.sendall(data)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _counted(manager: urllib3.PoolManager, url: str) -> _CountingSocket:
    """Connect the pool's connection to `url` and count what it writes."""
    pool = manager.connection_from_url(url)
    conn: Any = pool._get_conn()  # urllib3's HTTPConnection (typed as its base protocol)
    conn.connect()
    counting = _CountingSocket(conn.sock)
    conn.sock = counting
    pool._put_conn(conn)
    return counting


def test_a_request_with_a_body_leaves_in_one_write() -> None:
    manager = one_write(urllib3.PoolManager())
    with serving(_Echo) as url:
        counting = _counted(manager, url)
        body = json.dumps([{"op": "replace", "path": "/spec", "value": {"replicas": 3}}])
        response = manager.request("PATCH", f"{url}/x", body=body.encode())
        assert response.json() == {"method": "PATCH", "body": body}
        assert len(counting.writes) == 1
        head, _, sent = counting.writes[0].partition(b"\r\n\r\n")
        assert head.startswith(b"PATCH /x HTTP/1.1") and sent == body.encode()
        # The next requests on the same connection: one without a body, one with an empty one.
        assert manager.request("GET", f"{url}/y").json() == {"method": "GET", "body": ""}
        assert manager.request("POST", f"{url}/z", body=b"").json() == {
            "method": "POST",
            "body": "",
        }
        assert len(counting.writes) == 3
        assert manager.connection_from_url(url).num_connections == 1


def test_plain_urllib3_writes_the_headers_and_the_body_apart() -> None:
    # What the one write saves: without it the same request is two writes.
    manager = urllib3.PoolManager()
    with serving(_Echo) as url:
        counting = _counted(manager, url)
        manager.request("PATCH", f"{url}/x", body=b"{}")
        assert len(counting.writes) == 2


def test_a_failed_write_leaves_nothing_held_for_the_next_request() -> None:
    with serving(_Echo) as url:
        port = int(url.rsplit(":", 1)[1])
        conn = OneWriteHTTPConnection("127.0.0.1", port)
        conn.connect()
        conn.sock.close()  # the write of the body fails
        with pytest.raises(OSError):
            conn.request("PATCH", "/x", body=b"{}")
        assert conn._held is None and not conn._holding
        conn.close()
        conn.request("PATCH", "/x", body=b'{"a":1}')
        assert json.loads(conn.getresponse().data) == {"method": "PATCH", "body": '{"a":1}'}


def _client(url: str) -> client.ApiClient:
    configuration = client.Configuration(host=url)
    api = client.ApiClient(configuration)
    one_write(api.rest_client.pool_manager)
    return api


def test_an_idle_client_keeps_one_connection_open() -> None:
    with serving(_Echo) as url:
        api = _client(url)
        warmer = Warmer(api, interval=0.1)
        warmer.start()
        try:
            time.sleep(0.55)
        finally:
            warmer.stop()
        pool = api.rest_client.pool_manager.connection_from_url(url)
        # One request per idle interval, all on the one connection.
        assert 2 <= warmer.sent <= 6
        assert pool.num_connections == 1


def test_a_busy_client_gets_no_extra_request() -> None:
    with serving(_Echo) as url:
        api = _client(url)
        warmer = Warmer(api, interval=0.5)
        warmer.start()
        try:
            deadline = time.monotonic() + 1.2
            while time.monotonic() < deadline:
                request(api, "PATCH", "/busy", body={}, timeout=5)
                time.sleep(0.01)
        finally:
            warmer.stop()
        assert warmer.sent == 0
