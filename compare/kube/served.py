"""Any kind the API server serves, by discovery: server-side apply, read, delete, count.

Installs apply documents of many kinds, and a target's operator arm applies kinds the toolkit
has never heard of (its CRDs). Discovery (`/apis/<group>/<version>`) says whether the API
server serves a kind - listed only once its CRD is established - its plural and whether it is
namespaced; the generic calls here (server-side apply, read, delete, list) are built on that
path, with request timeouts.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from compare.errors import CompareError
from compare.kube.apierror import status_message
from compare.kube.wait import wait_until_gone

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
    headers = {"Accept": "application/json", **(header_params or {})}
    if not hasattr(api, "param_serialize"):
        # The client before its generator's rewrite (kubernetes < 32, the declared floor is
        # 31): one call_api with the path and the parameters; it raises on an error status.
        response = api.call_api(
            path,
            method,
            query_params=query_params or [],
            header_params=headers,
            body=body,
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        return json.loads(response.data or b"{}")
    serialized = api.param_serialize(
        method,
        path,
        query_params=query_params,
        header_params=headers,
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
    namespace: str | None,
    body: Mapping[str, Any],
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


def apply_all(
    api: client.ApiClient,
    docs: Sequence[Mapping[str, Any]],
    *,
    field_manager: str = FIELD_MANAGER,
    namespace: str = "default",
) -> list[dict[str, Any]]:
    """Server-side apply each document in order, forced (`kubectl apply --server-side
    --force-conflicts`): a namespaced object in its own namespace, else in `namespace`. The
    objects as stored. A kind no API serves (a CRD applied in the same batch is not established
    yet) or a refusal is one line naming the object; what came before it stays applied."""
    kinds: dict[tuple[str, str], Served | None] = {}
    stored = []
    for doc in docs:
        key = (str(doc["apiVersion"]), str(doc["kind"]))
        if key not in kinds:
            kinds[key] = served(api, *key)
        what, name = kinds[key], str(doc["metadata"]["name"])
        if what is None:
            raise CompareError(f"applying {key[1]} {name}: no API serves {key[1]} ({key[0]})")
        where = (doc["metadata"].get("namespace") or namespace) if what.namespaced else None
        try:
            stored.append(apply(api, what, where, doc, field_manager=field_manager))
        except client.ApiException as exc:
            shown = f"{where}/{name}" if where else name
            raise CompareError(f"applying {key[1]} {shown}: {api_message(exc)}") from None
    return stored


def established(api: client.ApiClient, crd: str) -> bool:
    """Whether the CustomResourceDefinition `crd` exists with Established=True (its kind is
    served from then on)."""
    try:
        body = _call(api, "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd}")
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise CompareError(f"reading CustomResourceDefinition {crd}: {api_message(exc)}") from None
    conditions = (body.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions)


def wait_established(api: client.ApiClient, crds: Sequence[str], *, timeout: float) -> None:
    """Until every CRD named is Established; past `timeout`, one line naming those that are
    not."""
    wait_until_gone(
        lambda: [crd for crd in crds if not established(api, crd)],
        deadline=timeout,
        timed_out=lambda left: CompareError(
            f"CustomResourceDefinition {', '.join(left)} not established within {timeout:.0f}s"
        ),
    )


def read(
    api: client.ApiClient, what: Served, namespace: str | None, name: str
) -> dict[str, Any] | None:
    try:
        found: dict[str, Any] = _call(api, "GET", what.path(namespace, name))
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    return found


def delete(api: client.ApiClient, what: Served, namespace: str | None, name: str) -> bool:
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


def delete_all(
    api: client.ApiClient,
    docs: Sequence[Mapping[str, Any]],
    *,
    timeout: float,
    namespace: str = "default",
) -> None:
    """Delete each document's object (a namespaced one in its own namespace, else in
    `namespace`), then wait until all are gone (`kubectl delete --ignore-not-found --wait`).
    What is absent, or of a kind no API serves, is skipped. Past `timeout`, one line naming
    what is left."""
    deleted: list[tuple[Served, str | None, str]] = []
    for doc in docs:
        what = served(api, str(doc["apiVersion"]), str(doc["kind"]))
        if what is None:
            continue
        name = str(doc["metadata"]["name"])
        where = (doc["metadata"].get("namespace") or namespace) if what.namespaced else None
        try:
            if delete(api, what, where, name):
                deleted.append((what, where, name))
        except client.ApiException as exc:
            shown = f"{where}/{name}" if where else name
            raise CompareError(f"deleting {what.kind} {shown}: {api_message(exc)}") from None

    def left() -> list[str]:
        return [
            f"{what.kind} {f'{where}/' if where else ''}{name}"
            for what, where, name in deleted
            if read(api, what, where, name) is not None
        ]

    wait_until_gone(
        left,
        deadline=timeout,
        timed_out=lambda still: CompareError(
            f"{', '.join(still)} still present {timeout:.0f}s after deletion"
        ),
    )


def listed(api: client.ApiClient, what: Served, namespace: str | None = None) -> list[Any]:
    """Objects of the kind in `namespace` (the whole cluster when None); none when no API
    serves it (a CRD not installed)."""
    try:
        body = _call(api, "GET", what.path(namespace))
    except client.ApiException as exc:
        if exc.status == 404:
            return []
        raise CompareError(f"listing {what.kind}s: {api_message(exc)}") from None
    return list(body.get("items") or [])


def count(api: client.ApiClient, what: Served) -> int:
    """Objects of the kind in the whole cluster."""
    return len(listed(api, what))
