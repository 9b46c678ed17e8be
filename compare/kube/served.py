"""Any kind the API server serves, by discovery: server-side apply, read, delete, count.

A target's operator arm applies objects of kinds the toolkit has never heard of (its CRDs).
Discovery (`/apis/<group>/<version>`) says whether the API server serves a kind - listed only
once its CRD is established - its plural and whether it is namespaced; the generic calls here
(server-side apply, read, delete, list) are built on that path, with request timeouts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.errors import CompareError
from compare.kube.apierror import status_message

FIELD_MANAGER = "compare"

# Every API call has a request timeout: (connect, read) seconds. A cluster that stops
# answering turns into an error within this bound, never into a hang or a verdict.
REQUEST_TIMEOUT = (3.0, 10.0)


@dataclass(frozen=True)
class Served:
    """A kind as the API server serves it."""

    api_version: str
    kind: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None, name: str | None = None) -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        scope = f"/namespaces/{namespace}" if self.namespaced and namespace else ""
        tail = f"/{name}" if name else ""
        return f"{base}{scope}/{self.plural}{tail}"


def _call(
    api: client.ApiClient,
    method: str,
    path: str,
    *,
    query_params: list[tuple[str, str]] | None = None,
    header_params: dict[str, str] | None = None,
    body: Any = None,
) -> Any:
    """One request to a path, as the typed client makes it (auth, timeouts); ApiException on
    an error status, as the typed calls raise it."""
    serialized = api.param_serialize(
        method,
        path,
        query_params=query_params,
        header_params={"Accept": "application/json", **(header_params or {})},
        body=body,
        auth_settings=["BearerToken"],
    )
    response = api.call_api(*serialized, _request_timeout=REQUEST_TIMEOUT)
    response.read()
    if not 200 <= response.status <= 299:
        raise client.ApiException(http_resp=response)
    return json.loads(response.data or b"{}")


def api_message(exc: client.ApiException) -> str:
    return status_message(exc) or f"{exc.status} {exc.reason}"


def served(api: client.ApiClient, api_version: str, kind: str) -> Served | None:
    """The kind as served, None when no API serves it (no such group/version, or its CRD is
    not established yet)."""
    path = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    try:
        listing = _call(api, "GET", path)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise CompareError(f"discovery of {api_version} failed: {api_message(exc)}") from None
    for resource in listing.get("resources") or []:
        if resource.get("kind") == kind and "/" not in str(resource.get("name")):
            return Served(api_version, kind, str(resource["name"]), bool(resource["namespaced"]))
    return None


def apply(
    api: client.ApiClient,
    what: Served,
    namespace: str,
    body: dict[str, Any],
    *,
    field_manager: str = FIELD_MANAGER,
) -> Any:
    """Server-side apply (forced: re-applying re-asserts the manager's own fields); the object
    as the API server stored it. ApiException when the API server refuses it."""
    name = body["metadata"]["name"]
    return _call(
        api,
        "PATCH",
        what.path(namespace, name),
        query_params=[("fieldManager", field_manager), ("force", "true")],
        header_params={"Content-Type": "application/apply-patch+yaml"},
        body=body,
    )


def read(api: client.ApiClient, what: Served, namespace: str, name: str) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = _call(api, "GET", what.path(namespace, name))
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def delete(api: client.ApiClient, what: Served, namespace: str, name: str) -> bool:
    """Delete (foreground is the garbage collector's business: background). False: absent."""
    try:
        _call(
            api,
            "DELETE",
            what.path(namespace, name),
            body={"propagationPolicy": "Background"},
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


def count(api: client.ApiClient, what: Served) -> int:
    """Objects of the kind in the whole cluster."""
    try:
        body = _call(api, "GET", what.path(None))
    except client.ApiException as exc:
        if exc.status == 404:
            return 0
        raise
    return len(body.get("items") or [])
