"""Control-plane faults of the embedded cluster: restart or stop its own components.

The embedded cluster's etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok
controller and LoadBalancer address controller are local processes that kwokctl started
(`compare.cluster.embedded`). These
actions kill or stop one of them and start it again by kwokctl's own mechanism (`kwokctl start
cluster` starts exactly the components that are not running), always on the cluster the
activity is pointed at (`KUBECONFIG`, as every activity here): the embedded cluster whose
kubeconfig that is, never another one. On any other cluster they refuse with one line (the
activity fails, nothing is touched); `compare run` leaves such experiments out on another
cluster before anything runs, and a trial whose control-plane fault failed is an error, never a
verdict.

`start_control_plane` is the rollback of every experiment that uses them: it starts whatever is
not running and returns once the API server is ready and the controller manager and scheduler
lead again, so the cluster is left healthy for the next trial. The Lease of a leader that is
not running is deleted before it starts again (its holder is dead; the new process would wait
out the lease duration): recovery, never part of what a trial measures.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare.chaos import shared
from compare.chaos.cluster import cluster_target
from compare.cluster import EmbeddedCluster, cluster_key, is_local, new_api_client
from compare.cluster.embedded import COMPONENTS
from compare.errors import CompareError
from compare.kube import wait_until_gone

__all__ = [
    "restart_control_plane_component",
    "start_control_plane",
    "stop_control_plane_component",
]

# The components that lead through a Lease in kube-system; a leader that cannot renew for its
# renew deadline (10 s) exits, so an API server or etcd outage can take them down too.
LEADERS = ("kube-controller-manager", "kube-scheduler")
LEADER_TIMEOUT_S = 60.0
POLL_S = 0.1


def embedded_cluster(secrets: Any = None) -> EmbeddedCluster:
    """The embedded cluster the activity is pointed at; ActivityFailed (one line) on any
    other."""
    target = cluster_target(secrets)
    if not is_local(target) or target.context is not None:
        raise ActivityFailed(
            f"control-plane faults need the embedded cluster (kwokctl processes on this machine);"
            f" {target.kubeconfig}{f' context {target.context}' if target.context else ''}"
            " is another cluster: nothing was done"
        )
    cluster = EmbeddedCluster(cluster_key(target))
    if cluster.kubeconfig.resolve() != target.kubeconfig.resolve():
        raise ActivityFailed(f"{target.kubeconfig} is not an embedded cluster's kubeconfig")
    return cluster


def restart_control_plane_component(
    component: str, kill: bool = True, configuration: Any = None, secrets: Any = None
) -> dict[str, Any]:
    """Kill one component of the embedded cluster (SIGKILL, or SIGTERM when `kill` is false)
    and start it again with kwokctl at once; return once the API server is ready and the
    controller manager and scheduler lead again.

    Returns `{component, signal, oldPid, newPid, downSeconds, restarted}`: `downSeconds` from
    the signal to the API server answering again, `restarted` every component with a new pid
    (a leader that lost its Lease meanwhile exits and is started again too). Trials that
    share the fault (`compare.chaos.shared`) go through one restart.
    """
    cluster = embedded_cluster(secrets)
    _check(component)
    return dict(
        shared.perform(
            configuration,
            f"restart {component}",
            lambda: _restart(cluster, component, kill=bool(kill)),
        )
    )


def _restart(cluster: EmbeddedCluster, component: str, *, kill: bool) -> dict[str, Any]:
    before = _pids(cluster)
    try:
        restart = cluster.restart_component(component, kill=kill)
        _lead_again(cluster, since=restart.ready_at)
        after = _all_up(cluster)
    except CompareError as exc:
        raise ActivityFailed(f"restarting {component}: {exc.message}") from exc
    return {
        "component": component,
        "signal": restart.signal,
        "oldPid": restart.old_pid,
        "newPid": restart.new_pid,
        "downSeconds": round(restart.seconds, 3),
        "restarted": sorted(n for n in COMPONENTS if after.get(n) != before.get(n)),
    }


def stop_control_plane_component(
    component: str, kill: bool = False, configuration: Any = None, secrets: Any = None
) -> dict[str, Any]:
    """Stop one component of the embedded cluster (SIGTERM, or SIGKILL with `kill`) and leave
    it stopped; `start_control_plane` starts it again. Its ports stay reserved meanwhile.
    Trials that share the fault stop it once."""
    cluster = embedded_cluster(secrets)
    _check(component)

    def stop() -> dict[str, Any]:
        try:
            pid = cluster.stop_component(component, kill=bool(kill))
        except CompareError as exc:
            raise ActivityFailed(f"stopping {component}: {exc.message}") from exc
        return {"component": component, "signal": "SIGKILL" if kill else "SIGTERM", "oldPid": pid}

    return dict(shared.perform(configuration, f"stop {component}", stop))


def start_control_plane(configuration: Any = None, secrets: Any = None) -> dict[str, Any]:
    """Start every component of the embedded cluster that is not running (kwokctl), then wait
    until the API server is ready and the controller manager and scheduler lead.

    A no-op on a healthy cluster. Returns `{pids, started}` (`started`: the components that
    were not running). Trials that share the fault start it once, when the last of them is
    through its heal window."""
    cluster = embedded_cluster(secrets)

    def start() -> dict[str, Any]:
        try:
            return restore(cluster)
        except CompareError as exc:
            raise ActivityFailed(f"starting the control plane: {exc.message}") from exc

    return dict(shared.perform(configuration, "start the control plane", start))


def restore(cluster: EmbeddedCluster) -> dict[str, Any]:
    """`start_control_plane` for callers outside chaostoolkit (CompareError on failure)."""
    started_at = time.time()
    before = _pids(cluster)
    _release_leases(cluster, [name for name in LEADERS if before.get(name) is None])
    cluster.start_components()
    _lead_again(cluster, since=started_at if None in before.values() else None)
    pids = _all_up(cluster)
    return {"pids": pids, "started": sorted(n for n in COMPONENTS if before.get(n) != pids[n])}


def _all_up(cluster: EmbeddedCluster) -> dict[str, int]:
    pids = _pids(cluster)
    down = [name for name, pid in pids.items() if pid is None]
    if down:
        raise CompareError(
            f"{', '.join(down)} of the embedded cluster {cluster.name!r} did not stay up"
            f" (logs in {cluster.cluster_dir / 'logs'})"
        )
    return {name: pid for name, pid in pids.items() if pid is not None}


def _check(component: str) -> None:
    if component not in COMPONENTS:
        raise ActivityFailed(
            f"unknown control-plane component {component!r} (known: {', '.join(COMPONENTS)})"
        )


def _pids(cluster: EmbeddedCluster) -> dict[str, int | None]:
    return {name: cluster.component_pid(name) for name in COMPONENTS}


def _lead_again(cluster: EmbeddedCluster, *, since: float | None) -> None:
    """Wait until each leader's Lease was renewed after `since` (None: any holder will do)
    by a live process; a leader that exited meanwhile is started again first."""
    pending = set(LEADERS)
    # The cluster's own kubeconfig: the Leases of the very cluster whose processes these are.
    api = new_api_client(cluster.kubeconfig, None)

    def not_leading() -> list[str]:
        nonlocal since
        dead = [name for name in pending if cluster.component_pid(name) is None]
        if dead:
            # A fresh process must take the Lease: the dead one's renewals do not count.
            since = time.time() if since is None else since
            _release_leases(cluster, dead)
            cluster.start_components()
        for name in sorted(pending):
            renewed = _renewed(api, name)
            if renewed is not None and (since is None or renewed >= since):
                pending.discard(name)
        return sorted(pending)

    try:
        wait_until_gone(
            not_leading,
            deadline=LEADER_TIMEOUT_S,
            timed_out=lambda left: CompareError(
                f"{', '.join(left)} did not lead again within"
                f" {LEADER_TIMEOUT_S:.0f}s (logs in {cluster.cluster_dir / 'logs'})"
            ),
            interval=POLL_S,
        )
    finally:
        api.close()


def _release_leases(cluster: EmbeddedCluster, names: list[str]) -> None:
    """Delete the Leases of leaders that are not running, before they are started again.

    The embedded cluster runs one process of each, so the holder of such a Lease is dead; a
    new process would still wait out the whole lease duration (15 s) from the moment it
    first reads the Lease (client-go trusts its own clock, not the holder's renewTime), as a
    graceful stop with release-on-cancel would have spared it. Best effort: with the API
    server down too there is nothing to delete yet, and the wait is only slower."""
    if not names:
        return
    api = new_api_client(cluster.kubeconfig, None)
    try:
        leases = client.CoordinationV1Api(api)
        for name in names:
            try:
                leases.delete_namespaced_lease(name, "kube-system", _request_timeout=5)
            except Exception:  # 404, or the API server is not back yet
                continue
    finally:
        api.close()


def _renewed(api: client.ApiClient, name: str) -> float | None:
    """When the leader of `name` last renewed its Lease (time.time()); None: no holder."""
    try:
        lease = client.CoordinationV1Api(api).read_namespaced_lease(
            name, "kube-system", _request_timeout=5
        )
    except Exception:  # an API error, or urllib3's while the API server comes back
        return None
    spec = lease.spec
    if spec is None or not spec.holder_identity or spec.renew_time is None:
        return None
    renew: datetime = spec.renew_time
    return renew.timestamp()
