"""The operator keeps one connection open while idle (`webapp_operator.transport`), against a
real HTTP server on the loopback."""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from kubernetes import client

from compare.judge.rest import request
from tests.loopback_http import serving
from webapp_operator.transport import Warmer


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


def _client(url: str) -> client.ApiClient:
    configuration = client.Configuration(host=url)
    return client.ApiClient(configuration)


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
