"""One request to the API server by path, on the kubernetes client's own connection pool.

The typed API classes (`AppsV1Api`, `CoreV1Api`, ...) import their generated models the first
time they are built: 24 MiB for those two on kubernetes 37 (283 model modules), a quarter of
the operator's memory before its first WebApp. The operator's calls are few and their bodies
are plain JSON already, so it sends them here instead: the same `ApiClient` (its pool, its TLS
files, its bearer token and refresh hook, its User-Agent), the same `ApiException` on an error
status, the same request timeouts; no models, on every supported client version.
"""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import quote, urlencode

import urllib3
from kubernetes import client

__all__ = ["Timeout", "headers", "request", "resource_path", "stream"]

# Seconds: a total, or (connect, read) like the typed client's `_request_timeout`.
Timeout = float | tuple[float, float]

_JSON = "application/json"


def resource_path(
    group_version: str,
    plural: str,
    namespace: str | None = None,
    name: str | None = None,
    subresource: str | None = None,
) -> str:
    """`/api/v1/namespaces/ns/services/web` or `/apis/apps/v1/...`: the core group has no
    name; a cluster-scoped resource (or a list over the cluster) has no namespace part."""
    root = f"/api/{group_version}" if "/" not in group_version else f"/apis/{group_version}"
    parts = [root]
    if namespace:
        parts.append(f"namespaces/{quote(namespace, safe='')}")
    parts.append(plural)
    if name:
        parts.append(quote(name, safe=""))
        if subresource:
            parts.append(subresource)
    return "/".join(parts)


def _timeout(value: Timeout) -> urllib3.Timeout:
    if isinstance(value, tuple):
        return urllib3.Timeout(connect=value[0], read=value[1])
    return urllib3.Timeout(total=value)


def headers(api: client.ApiClient, content_type: str | None) -> dict[str, str]:
    """The headers a request of `api` carries: its defaults (User-Agent), the content type, and
    the credentials (a refreshed bearer token); for another HTTP client on the same identity."""
    found = {"Accept": _JSON, **api.default_headers}
    if content_type:
        found["Content-Type"] = content_type
    # The configuration's own auth settings: a bearer token (refreshed by its hook when the
    # kubeconfig's exec plugin or the in-cluster token file gives one). Client certificates
    # are already in the pool.
    for setting in api.configuration.auth_settings().values():
        if setting.get("in") == "header" and setting.get("value"):
            found[setting["key"]] = setting["value"]
    return found


def _send(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    query: dict[str, Any] | None,
    body: Any,
    content_type: str | None,
    timeout: Timeout,
    preload: bool,
    stamps: dict[str, float] | None = None,
) -> Any:
    url = api.configuration.host + path
    params = {key: value for key, value in (query or {}).items() if value is not None}
    if params:
        url += "?" + urlencode(params)
    # Compact: fewer bytes to encrypt, send and decode (a restoring patch is a whole spec).
    data = None if body is None else json.dumps(body, separators=(",", ":")).encode()
    sent = headers(api, content_type or (_JSON if data is not None else None))
    pool = api.rest_client.pool_manager
    if stamps is not None:
        # The pool for this host, looked up once: its count of opened connections, read
        # before and after.
        host_pool = pool.connection_from_url(url)
        opened = getattr(host_pool, "num_connections", 0)
        stamps["wire"] = time.monotonic()
    response = pool.request(
        method,
        url,
        body=data,
        headers=sent,
        timeout=_timeout(timeout),
        preload_content=preload,
    )
    if stamps is not None:
        stamps["answered"] = time.monotonic()
        stamps["new_connections"] = getattr(host_pool, "num_connections", 0) - opened
    if not 200 <= response.status <= 299:
        text = (response.data if preload else response.read()).decode("utf-8", "replace")
        exc = client.ApiException(status=response.status, reason=response.reason)
        exc.body, exc.headers = text, response.headers
        raise exc
    return response


def stream(
    api: client.ApiClient, path: str, *, query: dict[str, Any] | None = None, timeout: Timeout
) -> Any:
    """A GET whose answer is read as it comes (a watch): the raw urllib3 response, for
    `kubernetes.watch.watch.iter_resp_lines`; an error status raises `ApiException`."""
    return _send(
        api, "GET", path, query=query, body=None, content_type=None, timeout=timeout, preload=False
    )


def request(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    query: dict[str, Any] | None = None,
    body: Any = None,
    content_type: str | None = None,
    timeout: Timeout,
    stamps: dict[str, float] | None = None,
) -> dict[str, Any]:
    """Send one request; the decoded JSON answer. An error status raises `ApiException`
    (with `status`, `reason`, `body` as the typed calls set them); a transport failure raises
    urllib3's error, as the typed calls do.

    `stamps` (a measurement) gets `time.monotonic()` when the request is handed to the
    connection pool ("wire", body and headers built) and when its answer has been read
    ("answered", before decoding), and how many connections the pool opened meanwhile."""
    response = _send(
        api,
        method,
        path,
        query=query,
        body=body,
        content_type=content_type,
        timeout=timeout,
        preload=True,
        stamps=stamps,
    )
    text = response.data.decode("utf-8", "replace")
    answer: dict[str, Any] = json.loads(text) if text else {}
    return answer
