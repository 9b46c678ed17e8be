"""Is the cluster itself up? The control plane watched during a trial.

A verdict about healing means something only while the machinery that heals is running: a
dead controller manager, scheduler or (embedded) kwok turns every pod fault into `not-healed`
through no fault of the approach. So each trial checks, at each re-read and once more at its
end, that the components are up; a component down at any check from the injection on makes
the trial an `error` naming it, never a verdict.

- The embedded cluster: each kwokctl component's process (etcd, kube-apiserver,
  kube-controller-manager, kube-scheduler, kwok-controller, the LoadBalancer address
  controller) by its pid file and command line - no API call.
- Any other cluster: the leader Leases of kube-controller-manager and kube-scheduler in
  kube-system must have been renewed within their lease duration (two GETs); the API server
  is checked by the trial's re-reads and watch.

A component the experiment itself stops or restarts (`compare.chaos.control_plane`) is the
fault, not an outage: it is exempt, and so are the leaders when it is etcd or the API server
(a leader that cannot renew exits: the documented consequence of that fault).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from kubernetes import client

from compare.chaos.control_plane import LEADERS
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key, is_local
from compare.cluster.embedded import COMPONENTS
from compare.errors import first_line
from compare.judge.kinds import REQUEST_TIMEOUT

CONTROL_PLANE_MODULE = "compare.chaos.control_plane"
SLACK_S = 5.0  # a lease renewed this long past its duration counts as lapsed

Health = Callable[[], list[str]]


def own_outages(document: Mapping[str, Any]) -> tuple[str, ...]:
    """The components an experiment's own activities stop or restart (exempt from the
    check), with the leaders when it takes down etcd or the API server."""
    found: list[str] = []
    for activity in _activities(document):
        provider = activity.get("provider") or {}
        if provider.get("module") != CONTROL_PLANE_MODULE:
            continue
        component = (provider.get("arguments") or {}).get("component")
        if isinstance(component, str):
            found.append(component)
            if component in ("etcd", "kube-apiserver"):
                found.extend(LEADERS)
    return tuple(dict.fromkeys(found))


def _activities(document: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    hypothesis = document.get("steady-state-hypothesis") or {}
    for part in (hypothesis.get("probes"), document.get("method")):
        for activity in part or []:
            if isinstance(activity, Mapping):
                yield activity


def cluster_health(
    cluster: ClusterTarget, api: client.ApiClient, exempt: Iterable[str] = ()
) -> Health:
    """A check returning the components that are down now (empty: all up)."""
    skip = set(exempt)
    if is_local(cluster) and cluster.context is None:
        embedded = EmbeddedCluster(cluster_key(cluster))
        components = [c for c in COMPONENTS if c not in skip]

        def processes() -> list[str]:
            return [f"{c} is not running" for c in components if embedded.component_pid(c) is None]

        return processes

    leaders = [c for c in LEADERS if c not in skip]

    def leases() -> list[str]:
        return [problem for name in leaders if (problem := _lease_problem(api, name))]

    return leases


def _lease_problem(api: client.ApiClient, name: str) -> str | None:
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease(
            name, "kube-system", _request_timeout=REQUEST_TIMEOUT
        )
    except client.ApiException as exc:
        if exc.status == 404:
            return None  # a cluster without that leader Lease (managed control planes)
        return f"{name}: its Lease could not be read ({first_line(exc)})"
    spec = lease.spec
    renewed: datetime | None = spec.renew_time if spec is not None else None
    if renewed is None:
        return f"{name}: its Lease was never renewed"
    age = datetime.now(renewed.tzinfo).timestamp() - renewed.timestamp()
    duration = float((spec.lease_duration_seconds if spec else None) or 15)
    if age > duration + SLACK_S:
        return f"{name}: its Lease was last renewed {age:.0f}s ago (duration {duration:.0f}s)"
    return None
