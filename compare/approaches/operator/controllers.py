"""The toolkit's own operator: install it, run it locally, apply WebApps for it.

The run engine calls these from several threads at once; every step that touches a cluster's
operator state holds that cluster's lock (a thread lock plus a file lock, so two `compare`
processes do not race either). What they do, in kubebuilder's words:

    install_operator   make install (CRD, RBAC, webhook cert + configuration) + make run
    start_operator     make run: the local process, under the ServiceAccount's identity
    stop_operator      SIGTERM (graceful: releases the Lease) or SIGKILL
    apply_webapp       kubectl apply the WebApp CR (one-line rejection); waiting for it and
                       removing it is the operator arm's (`compare.approaches.operator.arm`)

One operator per cluster, found rather than duplicated: before starting a process, the
operator Leases of the cluster are read. A holder seen renewing one (a local process started
through another kubeconfig, or the chart's Deployment) is used as it is when the installed CRD
is this toolkit's, and is otherwise a one-line error naming it; a stale holder (not renewed for
its lease duration) is taken over. A process started here that does not become ready is
stopped again before the error is raised.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from kubernetes import client

from compare.approaches.operator.install import apply_cluster_objects
from compare.approaches.operator.lease import (
    LeaseView,
    LeaseWatch,
    crd_difference,
    find_active_leader,
    read_crd,
    read_leases,
)
from compare.approaches.operator.process import (
    DEFAULT_INSTANCE,
    OPERATOR,
    OperatorOptions,
    health,
    is_ready,
    spawn_operator,
)
from compare.approaches.operator.target_process import forget_all
from compare.cluster import ClusterTarget, cluster_key, is_local
from compare.deploy.install import write_identity_kubeconfig
from compare.deploy.local import free_port, read_settings, save_settings, state_lock
from compare.deploy.processes import (
    LocalProcess,
    alive,
    last_log_line,
    read_process,
    recorded,
    terminate,
)
from compare.errors import EXIT_FAILED, CompareError
from compare.kube import (
    Served,
    served,
    wait_for,
)
from compare.paths import cache_dir
from compare.webapp import API_GROUP, API_VERSION, KIND, PLURAL, WebApp, to_cr
from webapp_operator.certs import CertFiles, ensure_tls
from webapp_operator.names import OPERATOR_NAMESPACE, SERVICE_ACCOUNT

POLL_S = 0.1
# Start-up is a few seconds, but a replica killed without releasing its Lease makes the next
# one wait out the lease duration first.
START_TIMEOUT_S = 60.0
# While a process started here stands by, how often the Leases are read for another leader.
LOOK_EVERY_S = 1.0


@dataclass(frozen=True)
class OperatorHandle:
    """The local operator of one cluster."""

    cluster: str  # the state directory's name for the cluster
    state_dir: Path
    pid: int | None
    log_path: Path
    running: bool
    ready: bool
    webhook_url: str | None
    # The Lease holderIdentity of the process (when known).
    holder: str | None = None
    # Set when this cluster's operator was found already leading rather than started for this
    # target: where it runs.
    found: str | None = None

    def describe(self) -> str:
        if self.found:
            return f"using the operator already leading this cluster: {self.found}"
        state = "ready" if self.ready else "running" if self.running else "stopped"
        return f"operator pid {self.pid} ({state}), log {self.log_path}"


def _webhook_url(settings: dict[str, Any]) -> str | None:
    host, port = settings.get("webhook_host"), settings.get("webhook_port")
    return f"https://{host}:{port}" if host and port else None


def _handle(target: ClusterTarget, directory: Path, info: LocalProcess | None) -> OperatorHandle:
    running = alive(info)
    return OperatorHandle(
        cluster=cluster_key(target),
        state_dir=directory,
        pid=info.pid if info else None,
        log_path=info.log_path if info else directory / f"{DEFAULT_INSTANCE}.log",
        running=running,
        ready=running and info is not None and is_ready(info),
        webhook_url=_webhook_url(read_settings(directory)),
        holder=(info.identity or None) if info else None,
    )


# -- the operator already leading the cluster ------------------------------------------------


def _local_leader(holders: set[str]) -> tuple[Path, LocalProcess] | None:
    """Of every running operator process this machine's toolkit started, any cluster, the one
    holding one of these Leases and leading (its /healthz says so)."""
    root = cache_dir() / OPERATOR.area
    directories = sorted(d for d in root.iterdir() if d.is_dir()) if root.is_dir() else []
    running = [(d, info) for d in directories for info in recorded(d) if alive(info)]
    for directory, info in running:
        summary = health(info) or {}
        identity = info.identity or summary.get("identity")
        if identity in holders and summary.get("leading"):
            return directory, replace(info, identity=str(identity))
    return None


def _check_crd(api: client.ApiClient, who: str) -> None:
    difference = crd_difference(read_crd(api))
    if difference is not None:
        raise CompareError(
            f"another WebApp operator leads this cluster, {who}, and {difference}: stop it "
            "(helm uninstall, kubectl scale --replicas=0, or `compare undeploy operator "
            "--stop-operator` with its kubeconfig) or upgrade it to this version, then retry",
            exit_code=EXIT_FAILED,
        )


def _serving_handle(
    target: ClusterTarget, directory: Path, api: client.ApiClient, lease: LeaseView
) -> OperatorHandle:
    """The handle of a leader found on this Lease (checked to serve this CRD)."""
    holder = lease.holder or "?"
    local = _local_leader({holder})
    if local is not None:
        other, info = local
        _check_crd(api, f"the local process pid {info.pid} ({holder})")
        found = f"pid {info.pid}, started for {other.name}, log {info.log_path}"
        return replace(_handle(target, other, info), running=True, found=found)
    age = f", renewed {lease.age:.1f}s ago" if lease.age is not None else ""
    where = f"{holder} (Lease {lease.where}{age}), not a process of this machine"
    _check_crd(api, where)
    handle = _handle(target, directory, None)
    return replace(handle, running=True, ready=True, webhook_url=None, holder=holder, found=where)


def _find_serving(target: ClusterTarget, directory: Path) -> OperatorHandle | None:
    """The operator already leading this cluster, other than this target's own process: a
    local one of another state directory (asked directly), else any holder seen renewing."""
    with target.api_client() as api:
        info = read_process(directory, DEFAULT_INSTANCE)
        own = frozenset({info.identity}) if info is not None and info.identity else frozenset()
        held = [v for v in read_leases(api, OPERATOR_NAMESPACE) if v.holder and v.holder not in own]
        if not held:
            return None
        if (local := _local_leader({v.holder for v in held if v.holder})) is not None:
            # A local process says it leads: no need to watch its Lease renew.
            lease = next(v for v in held if v.holder == local[1].identity)
            return _serving_handle(target, directory, api, lease)
        leader = find_active_leader(api, OPERATOR_NAMESPACE, ignore=own)
        return None if leader is None else _serving_handle(target, directory, api, leader)


def _await_ready(
    target: ClusterTarget, directory: Path, info: LocalProcess, *, timeout: float
) -> OperatorHandle:
    """Wait until our process leads and is ready. Should another operator be seen renewing a
    Lease meanwhile (ours stands by behind it), ours is a duplicate: stop it, use that one.
    On any failure the process is stopped before the error propagates."""
    watch: LeaseWatch | None = None
    next_look = time.monotonic() + LOOK_EVERY_S
    api = target.api_client()

    def look() -> OperatorHandle | bool:
        """Ready (True), a leader that is not ours (its handle) or not yet (False)."""
        nonlocal watch, next_look
        if is_ready(info):
            return True
        if not alive(info):
            raise CompareError(
                f"the operator process {info.pid} exited during start-up: "
                f"{last_log_line(info.log_path)} (log: {info.log_path})",
                exit_code=EXIT_FAILED,
            )
        if time.monotonic() >= next_look:
            next_look = time.monotonic() + LOOK_EVERY_S
            if (health(info) or {}).get("role") == "standby":
                ignore = frozenset({info.identity}) if info.identity else frozenset()
                if watch is None:
                    watch = LeaseWatch(api, OPERATOR_NAMESPACE, ignore)
                elif (lease := watch.renewed()) is not None:
                    return _serving_handle(target, directory, api, lease)
        return False

    try:
        found = wait_for(
            look,
            deadline=timeout,
            timed_out=lambda _: CompareError(
                f"the operator process {info.pid} was not ready within {timeout:.0f}s "
                f"(log: {info.log_path}); it was stopped",
                exit_code=EXIT_FAILED,
            ),
            interval=POLL_S,
        )
        if isinstance(found, OperatorHandle):
            terminate(info)
            return found
    except BaseException:
        terminate(info)
        raise
    finally:
        api.close()
    return _handle(target, directory, info)


def _start_locked(
    target: ClusterTarget,
    directory: Path,
    options: OperatorOptions | None,
    *,
    look: bool = True,
    timeout: float | None = None,
) -> OperatorHandle:
    info = read_process(directory, DEFAULT_INSTANCE)
    options = options or OperatorOptions()
    if alive(info) and info is not None:
        return _await_ready(target, directory, info, timeout=timeout or START_TIMEOUT_S)
    if look and (found := _find_serving(target, directory)) is not None:
        return found
    settings = read_settings(directory)
    kubeconfig = directory / "kubeconfig.yaml"
    write_identity_kubeconfig(
        target,
        OPERATOR_NAMESPACE,
        SERVICE_ACCOUNT,
        kubeconfig,
        missing=f"the operator is not installed on {target.describe()}: "
        "run `compare deploy operator` first",
    )
    info = spawn_operator(
        directory,
        instance=DEFAULT_INSTANCE,
        kubeconfig=kubeconfig,
        health_port=free_port(),
        # Serve the webhook only where the API server was told to call it.
        webhook_port=settings.get("webhook_port") if _webhook_url(settings) else None,
        cert_dir=directory / "certs",
        options=options,
    )
    return _await_ready(
        target, directory, info, timeout=timeout or START_TIMEOUT_S + options.lease_duration
    )


_HOST_LABEL = re.compile(r"^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?$")


def check_webhook_host(value: str | None) -> None:
    """`--webhook-host`: a DNS name or an IP address (the host part of the URL the API server
    calls); a one-line error otherwise."""
    if value is None:
        return
    with contextlib.suppress(ValueError):
        ipaddress.ip_address(value)
        return
    labels = value.split(".")
    if len(value) > 253 or not all(_HOST_LABEL.match(label) for label in labels):
        raise CompareError(f"--webhook-host {value!r}: not a host name or an IP address")


def install_operator(
    target: ClusterTarget,
    *,
    options: OperatorOptions | None = None,
    webhook_host: str | None = None,
) -> OperatorHandle:
    """Install the CRD, RBAC and webhook configuration, then start the local operator unless
    one runs for this cluster; return once it leads and watches. Idempotent.

    An operator already leading the cluster (found on its Lease) is used as it is: nothing is
    installed over it."""
    with OPERATOR.claimed(target) as directory:
        info = read_process(directory, DEFAULT_INSTANCE)
        if alive(info) and info is not None and is_ready(info):
            with target.api_client() as api:
                if read_crd(api) is not None:
                    return _handle(target, directory, info)
        if not alive(info) and (found := _find_serving(target, directory)) is not None:
            return found
        settings = read_settings(directory)
        settings.setdefault("webhook_port", free_port())
        if webhook_host:
            settings["webhook_host"] = webhook_host
        elif is_local(target):
            settings["webhook_host"] = "127.0.0.1"
        save_settings(directory, settings)
        hosts = sorted({"127.0.0.1", settings.get("webhook_host") or "127.0.0.1"})
        certs = CertFiles(directory / "certs")
        ensure_tls(certs, hosts)
        apply_cluster_objects(target, certs=certs, webhook_url=_webhook_url(settings))
        return _start_locked(target, directory, options, look=False)


def start_operator(
    target: ClusterTarget,
    *,
    options: OperatorOptions | None = None,
    timeout: float | None = None,
) -> OperatorHandle:
    """Start the local operator process unless one runs for this cluster or another operator
    leads it already (the cluster must be installed). `timeout`: seconds to wait for it to
    lead (default: start-up plus one lease duration); past it the process is stopped."""
    with OPERATOR.claimed(target) as directory:
        return _start_locked(target, directory, options, timeout=timeout)


def stop_operator(
    target: ClusterTarget, *, kill: bool = False, serving: bool = True
) -> OperatorHandle | None:
    """Stop the local operator of this cluster: SIGTERM (graceful, releases the Lease) or
    SIGKILL. With `serving`, when this target started none, the local process found leading
    the cluster (started through another kubeconfig) is the one stopped. Returns what was
    stopped (None: no local process serves the cluster; one in the cluster is never touched)."""
    with state_lock(OPERATOR.state_dir(target)) as directory:
        info = read_process(directory, DEFAULT_INSTANCE)
        if not alive(info) or info is None:
            if not serving:
                return None
            with target.api_client() as api:
                holders = {v.holder for v in read_leases(api, OPERATOR_NAMESPACE) if v.holder}
            local = _local_leader(holders) if holders else None
            if local is None:
                return None
            directory, info = local
        handle = _handle(target, directory, info)
        terminate(info, kill=kill)
        return handle


class LocalOperator:
    """The operator's local process as `Approach.controllers` offers it (the chaos faults stop
    and start it): started and stopped with the cluster's Lease in mind."""

    def start(self, cluster: ClusterTarget) -> OperatorHandle:
        return start_operator(cluster)

    def stop(self, cluster: ClusterTarget, *, kill: bool = False) -> OperatorHandle | None:
        return stop_operator(cluster, kill=kill)

    def forget(self, cluster: ClusterTarget) -> None:
        OPERATOR.forget(cluster)
        # And every target's operator process of the cluster (`install.process`).
        forget_all(cluster)


def operator_status(target: ClusterTarget) -> OperatorHandle | None:
    """The local operator of this cluster (None: never started here)."""
    directory = OPERATOR.state_dir(target)
    info = read_process(directory, DEFAULT_INSTANCE)
    if info is None:
        return None
    return _handle(target, directory, info)


# -- WebApps ---------------------------------------------------------------------------------


# The WebApp kind as the API server serves it (known: the CRD is ours, no discovery needed).
WEBAPPS = Served(f"{API_GROUP}/{API_VERSION}", KIND, PLURAL, namespaced=True)


def apply_webapp(api: client.ApiClient, webapp: WebApp, namespace: str) -> dict[str, Any]:
    """Server-side apply the CR; a rejection (schema, CEL, webhook) is a one-line error."""
    try:
        body: dict[str, Any] = served.apply(api, WEBAPPS, namespace, to_cr(webapp, namespace))
    except client.ApiException as exc:
        message = served.api_message(exc)
        raise CompareError(f"{KIND} {namespace}/{webapp.name} rejected: {message}") from None
    return body
