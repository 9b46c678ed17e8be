"""Who leads a cluster's WebApps already: the operator's Lease, read from the outside.

Every replica of the operator — the toolkit's local process, or the chart's Deployment in any
namespace — elects its leader on a Lease named `webapp-operator-leader` in its own namespace.
A holder is *active* when the Lease is being renewed: seen to change while we watch, within
the lease duration it announces. A holder that has not renewed for a full lease duration is
*stale* (its process died without releasing), and a new operator may take over.

Ages are measured against the API server's own clock (the `Date` header of the answer that
carried the Lease), so the clock of this machine does not enter; the verdict "active" needs an
observed renewal, never a clock comparison alone.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

import urllib3
import yaml
from kubernetes import client

from compare.errors import CompareError
from compare.judge import REQUEST_TIMEOUT
from compare.kube import Deadline, poll
from compare.kube.apierror import if_found
from compare.webapp import API_VERSION
from webapp_operator.manifests import CRD_PATH
from webapp_operator.names import CRD_NAME, LEASE_NAME

__all__ = [
    "LeaseView",
    "LeaseWatch",
    "crd_difference",
    "find_active_leader",
    "read_crd",
    "read_leases",
]

POLL_S = 0.25
# An active leader renews every retry period (2 s by default) — far sooner than this. A holder
# whose Lease claims longer and has not renewed within this long is not waited out.
OBSERVE_CAP_S = 30.0
# The Date header has a resolution of one second.
CLOCK_SLACK_S = 1.0


@dataclass(frozen=True)
class LeaseView:
    """One operator Lease as read at one moment."""

    namespace: str
    holder: str | None
    duration: float
    version: str
    age: float | None  # seconds from renewTime to the API server's "now"; None: unknown

    @property
    def where(self) -> str:
        return f"{self.namespace}/{LEASE_NAME}"


def _parse_time(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _server_now(headers: Any) -> datetime | None:
    date = headers.get("Date") if headers is not None else None
    if not date:
        return None
    try:
        return parsedate_to_datetime(date)
    except (TypeError, ValueError):
        return None


def _view(item: dict[str, Any], now: datetime | None) -> LeaseView:
    spec = item.get("spec") or {}
    renew = _parse_time(spec.get("renewTime"))
    age = (now - renew).total_seconds() if now is not None and renew is not None else None
    return LeaseView(
        namespace=item["metadata"]["namespace"],
        holder=spec.get("holderIdentity") or None,
        duration=float(spec.get("leaseDurationSeconds") or 15),
        version=item["metadata"]["resourceVersion"],
        age=age,
    )


def read_leases(api: client.ApiClient, namespace: str) -> list[LeaseView]:
    """Every operator Lease in the cluster (one list call); where listing all namespaces is
    forbidden, the one in `namespace` only."""
    leases = client.CoordinationV1Api(api)
    try:
        raw = leases.list_lease_for_all_namespaces(
            field_selector=f"metadata.name={LEASE_NAME}",
            _preload_content=False,
            _request_timeout=REQUEST_TIMEOUT,
        )
        now = _server_now(raw.headers)
        return [_view(item, now) for item in json.loads(raw.data).get("items") or []]
    except client.ApiException as exc:
        if exc.status != 403:
            raise CompareError(
                f"reading the operator Leases failed: {exc.status} {exc.reason}"
            ) from None
    except urllib3.exceptions.HTTPError as exc:
        raise CompareError(f"reading the operator Leases failed: {exc}") from None
    try:
        raw = leases.read_namespaced_lease(
            LEASE_NAME, namespace, _preload_content=False, _request_timeout=REQUEST_TIMEOUT
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return []
        raise CompareError(
            f"reading the Lease {namespace}/{LEASE_NAME} failed: {exc.status} {exc.reason}"
        ) from None
    return [_view(json.loads(raw.data), _server_now(raw.headers))]


def _may_be_live(view: LeaseView) -> bool:
    """Held, and not already expired by the API server's clock."""
    if view.holder is None:
        return False
    return view.age is None or view.age < view.duration + CLOCK_SLACK_S


class LeaseWatch:
    """Tells when a foreign holder renews an operator Lease (or takes one)."""

    def __init__(
        self, api: client.ApiClient, namespace: str, ignore: frozenset[str] = frozenset()
    ) -> None:
        self._api, self._namespace, self._ignore = api, namespace, ignore
        self.first = {v.namespace: v for v in read_leases(api, namespace)}

    def renewed(self) -> LeaseView | None:
        """One read: a Lease now held by someone not ignored whose version moved since the
        first read (a renewal or a takeover), if any."""
        for view in read_leases(self._api, self._namespace):
            before = self.first.get(view.namespace)
            if view.holder is None or view.holder in self._ignore:
                continue
            if before is None or view.version != before.version:
                return view
        return None


def find_active_leader(
    api: client.ApiClient, namespace: str, *, ignore: frozenset[str] = frozenset()
) -> LeaseView | None:
    """The Lease of a holder seen renewing it, or None when every Lease is free, expired
    or not renewed within its duration (a stale holder: safe to take over).

    Watches at most until the last candidate's lease would expire (capped), so an active
    leader — which renews every retry period — is recognised within seconds, and a stale one
    costs the rest of its lease duration at most. Holders in `ignore` (our own) are skipped."""
    started = time.monotonic()
    watch = LeaseWatch(api, namespace, ignore)
    candidates = [v for v in watch.first.values() if v.holder not in ignore and _may_be_live(v)]
    if not candidates:
        return None
    wait = max(
        v.duration - v.age + CLOCK_SLACK_S if v.age is not None else v.duration for v in candidates
    )
    _, view = poll(
        watch.renewed,
        deadline=Deadline(min(max(wait, POLL_S), OBSERVE_CAP_S), started=started),
        done=lambda view: view is not None,
        interval=POLL_S,
    )
    if view is not None or wait <= OBSERVE_CAP_S:
        return view
    lease = max(candidates, key=lambda v: v.duration - (v.age or 0.0))
    raise CompareError(
        f"the operator Lease {lease.where} is held by {lease.holder}, not renewed for "
        f"{OBSERVE_CAP_S:.0f}s yet valid for up to {lease.duration:.0f}s: stop that "
        "operator or delete the Lease, then retry"
    )


# -- is the active operator ours? ------------------------------------------------------------


def _version_entry(crd: dict[str, Any]) -> dict[str, Any] | None:
    for version in (crd.get("spec") or {}).get("versions") or []:
        if version.get("name") == API_VERSION:
            return dict(version)
    return None


def _comparable(version: dict[str, Any]) -> dict[str, Any]:
    return {
        key: version.get(key)
        for key in ("served", "storage", "schema", "subresources", "additionalPrinterColumns")
    }


def crd_difference(installed: dict[str, Any] | None) -> str | None:
    """Why the installed CRD is not the one this toolkit's operator serves (None: it is)."""
    if installed is None:
        return f"the CRD {CRD_NAME} is not installed"
    ours = _version_entry(yaml.safe_load(CRD_PATH.read_text()))
    theirs = _version_entry(installed)
    if ours is None:
        raise CompareError(f"{CRD_PATH}: no version {API_VERSION}")
    if theirs is None:
        return f"the installed CRD {CRD_NAME} has no version {API_VERSION}"
    if not theirs.get("served"):
        return f"the installed CRD {CRD_NAME} does not serve {API_VERSION}"
    mine, live = _comparable(ours), _comparable(theirs)
    differing = sorted(key for key in mine if mine[key] != live[key])
    if differing:
        return (
            f"the installed CRD {CRD_NAME} {API_VERSION} differs from this toolkit's "
            f"({', '.join(differing)})"
        )
    return None


def read_crd(api: client.ApiClient) -> dict[str, Any] | None:
    raw = if_found(
        f"reading the CRD {CRD_NAME} failed",
        client.ApiextensionsV1Api(api).read_custom_resource_definition,
        CRD_NAME,
        _preload_content=False,
        _request_timeout=REQUEST_TIMEOUT,
    )
    if raw is None:
        return None
    body: dict[str, Any] = json.loads(raw.data)
    return body
