"""One reading of a namespace: every object of the watched kinds, as the API server's JSON
(a Secret's values as their hashes; cluster-scoped kinds as the whole cluster's).

A reading comes either from a full re-read (`read`, list calls with request timeouts) or from
a trial's watch cache (`compare.judge.watch`); the judge treats both alike.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from compare.judge.kinds import REQUEST_TIMEOUT, WATCHED, resolve, unscoped
from compare.judge.rest import request
from compare.judge.secrets import hashed_secret

Obj = dict[str, Any]


@dataclass(frozen=True)
class Reading:
    """The objects as seen at `at` (time.time() seconds: a read's end, an event's receipt)."""

    at: float
    objects: Mapping[str, Mapping[str, Obj]]
    # Per kind, the list's resourceVersion (full re-reads only): what the watch must have seen.
    versions: Mapping[str, str] = field(default_factory=dict)
    # `Kind/name` -> how it changed while a watch was relisting (410 Gone): its uid,
    # generation or (without a generation) resourceVersion moved between the last event
    # before the gap and the relist. Set only on the reading of that relist.
    gap: Mapping[str, str] = field(default_factory=dict)

    def get(self, kind_name: str, name: str) -> Obj | None:
        return (self.objects.get(kind_name) or {}).get(name)

    def all(self, kind_name: str) -> list[Obj]:
        return list((self.objects.get(kind_name) or {}).values())


def read(api: client.ApiClient, namespace: str, kinds: Sequence[str] = WATCHED) -> Reading:
    """List every object of `kinds` in the namespace (raw JSON, request timeouts)."""
    objects: dict[str, dict[str, Obj]] = {}
    versions: dict[str, str] = {}
    for name in kinds:
        body = list_raw(api, namespace, name)
        objects[name] = {item["metadata"]["name"]: item for item in body.get("items") or []}
        versions[name] = str((body.get("metadata") or {}).get("resourceVersion") or "")
    return Reading(time.time(), objects, versions)


def list_raw(api: client.ApiClient, namespace: str, kind_name: str, **params: Any) -> Obj:
    """One list of `kind_name` in `namespace` (a scoped kind name, `Kind@ns`: in its own)."""
    row = resolve(api, kind_name)
    kind_name, elsewhere = row.kind, unscoped(kind_name)[1]
    result: Obj
    if row.served:
        # Any other kind the API server serves (a custom resource): by path, no typed class.
        if params:
            raise ValueError(f"listing {kind_name} by path takes no parameters: {sorted(params)}")
        result = request(api, "GET", row.path(elsewhere or namespace), timeout=REQUEST_TIMEOUT)
    else:
        response = row.list_call(api)(
            elsewhere or namespace,
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
            **params,
        )
        result = json.loads(response.data)
    # A list's items carry no kind (a watch event's object does): set it, so that every
    # object of a reading says what it is, however it was read (a rule by kind - a
    # DaemonSet's pod count - must not depend on whether a list or an event brought it).
    for item in result.get("items") or []:
        item["kind"] = kind_name
    # A Secret's values never reach a reading: only their hashes (compare.judge.secrets).
    if kind_name == "Secret" and result.get("items"):
        result["items"] = [hashed_secret(item) for item in result["items"]]
    return result
