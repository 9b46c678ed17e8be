"""Every request to an API server ends within its deadline, however slowly the server answers
(`compare.kube.deadline`): a tarpit on 127.0.0.1 that sends its answer a byte at a time
(after prompt headers, or the status line itself a byte at a time) is cut at the request's
total deadline with one line naming the server; a stream read at the caller's pace is not."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
import urllib3
from kubernetes import client

from compare.cluster.target import new_api_client
from compare.judge.rest import request
from compare.kube.deadline import DEFAULT_TIMEOUT, RequestDeadline, deadline_of
from tests.loopback_http import serving

BODY = b'{"kind": "NamespaceList", "apiVersion": "v1", "metadata": {}, "items": []}'
# A byte every 0.4 s: the per-read timeouts below (1 s and more) never fire, only the total
# deadline can (at a byte a second, a 1 s read timeout raced the next byte).
BYTE_EVERY_S = 0.4
# The watch stream's five bytes, one a second: longer in all than its deadline.
STREAM_BYTE_EVERY_S = 1.0


class Tarpit(BaseHTTPRequestHandler):
    """`/slow-head/...`: even the status line a byte at a time; `/stream...`: five bytes,
    one a second; anything else: prompt headers, then the body a byte at a time."""

    protocol_version = "HTTP/1.1"

    def _trickle(self, data: bytes, every: float = BYTE_EVERY_S) -> None:
        for byte in data:
            try:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
            except OSError:
                return  # the client hung up: its deadline passed
            time.sleep(every)

    def do_GET(self) -> None:
        if self.path.startswith("/slow-head"):
            self._trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}")
            return
        stream = self.path.startswith("/stream")
        body = b"12345" if stream else BODY + b" " * 1000
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self._trickle(body, STREAM_BYTE_EVERY_S if stream else BYTE_EVERY_S)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def tarpit() -> Iterator[str]:
    with serving(Tarpit) as url:
        yield url


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "c",
                "clusters": [{"name": "c", "cluster": {"server": server}}],
                "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
                "users": [{"name": "u", "user": {"token": "x"}}],
            }
        )
    )
    return path


@pytest.fixture
def api(tmp_path: Path, tarpit: str) -> Iterator[client.ApiClient]:
    api_client = new_api_client(kubeconfig(tmp_path / "kc", tarpit), None)
    # The typed API's models imported before any clock starts.
    client.CoreV1Api(api_client)
    try:
        yield api_client
    finally:
        api_client.close()


def timed(call: object) -> tuple[BaseException | None, float]:
    started = time.monotonic()
    try:
        call()  # type: ignore[operator]
    except Exception as exc:
        return exc, time.monotonic() - started
    return None, time.monotonic() - started


@pytest.mark.parametrize("timeout", [2.0, (1.0, 1.0)])
def test_a_body_a_byte_a_second_is_cut_at_the_deadline(
    api: client.ApiClient, tarpit: str, timeout: float | tuple[float, float]
) -> None:
    error, took = timed(lambda: client.CoreV1Api(api).list_namespace(_request_timeout=timeout))
    assert isinstance(error, RequestDeadline), error
    assert 1.5 < took < 6.0
    assert error.message.startswith(
        f"the API server at {tarpit} sent no complete answer within 2 s"
    )
    assert "\n" not in error.message


def test_a_status_line_a_byte_a_second_is_cut_at_the_deadline(
    api: client.ApiClient, tarpit: str
) -> None:
    # A path of its own: the typed client's calls cannot name one.
    error, took = timed(lambda: request(api, "GET", "/slow-head/x", timeout=(1.0, 1.0)))
    assert isinstance(error, RequestDeadline), error
    assert took < 6.0
    # A urllib3 timeout too: the callers that retry transport failures retry it.
    assert isinstance(error, urllib3.exceptions.TimeoutError)


def test_a_request_on_the_pool_is_bounded_too(api: client.ApiClient, tarpit: str) -> None:
    error, took = timed(lambda: request(api, "GET", "/api/v1/namespaces", timeout=2.0))
    assert isinstance(error, RequestDeadline), error
    assert took < 6.0


def test_a_watch_is_read_at_the_callers_pace(api: client.ApiClient) -> None:
    # Headers within the deadline; the events, five seconds long, past it and still whole.
    url = api.configuration.host + "/stream?watch=true"
    stream = api.call_api("GET", url, _request_timeout=(1.0, 2.0)).response
    started = time.monotonic()
    assert stream.read() == b"12345"
    assert time.monotonic() - started > 3.0


def test_a_raw_answer_the_caller_reads_is_cut_at_the_deadline(
    api: client.ApiClient, tarpit: str
) -> None:
    # Not a watch: the raw answer (`_preload_content=False`) is read within the deadline too.
    raw = client.CoreV1Api(api).list_namespace(_preload_content=False, _request_timeout=(1.0, 1.0))
    error, took = timed(raw.read)
    assert isinstance(error, RequestDeadline), error
    assert took < 4.0
    assert error.server == tarpit


def test_the_default_deadline() -> None:
    assert deadline_of(None) == sum(DEFAULT_TIMEOUT)
    assert deadline_of(4) == 4.0
    assert deadline_of((3.0, 10.0)) == 13.0
    assert deadline_of(urllib3.Timeout(connect=1.0, read=2.0)) == 3.0
    assert deadline_of(urllib3.Timeout(total=7.0)) == 7.0
