"""The operator path: install the operator, run it locally, deploy and remove WebApps with it.

The run engine calls these from several threads at once; every step that touches a cluster's
operator state holds that cluster's lock (a thread lock plus a file lock, so two `compare`
processes do not race either). What they do, in kubebuilder's words:

    install_operator   make install (CRD, RBAC, webhook cert + configuration) + make run
    start_operator     make run: the local process, under the ServiceAccount's identity
    stop_operator      SIGTERM (graceful: releases the Lease) or SIGKILL
    deploy_operator    kubectl apply the WebApp CR, wait for Available and the desired state
    undeploy_operator  kubectl delete the CR, wait until the finalizer has run and it is gone
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import re
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kubernetes import client

from compare.cluster import ClusterTarget, status_message
from compare.deploy.live import WaitCancelled, wait_for_desired_state
from compare.deploy.operator_install import (
    apply_cluster_objects,
    cluster_key,
    ensure_certs,
    free_port,
    is_local,
    state_dir,
    write_identity_kubeconfig,
)
from compare.deploy.operator_process import (
    DEFAULT_INSTANCE,
    OperatorOptions,
    ProcessInfo,
    is_ready,
    is_running,
    read_process,
    spawn,
    terminate,
    wait_ready,
)
from compare.errors import EXIT_FAILED, CompareError
from compare.judge import REQUEST_TIMEOUT, with_api_defaults
from compare.webapp import API_GROUP, API_VERSION, KIND, PLURAL, WebApp, to_cr
from webapp_operator.builders import build_deployment, build_service, owner_reference
from webapp_operator.names import CRD_NAME

__all__ = [
    "OperatorHandle",
    "OperatorOptions",
    "deploy_operator",
    "install_operator",
    "operator_status",
    "start_operator",
    "stop_operator",
    "undeploy_operator",
]

FIELD_MANAGER = "compare"
POLL_S = 0.1
# Start-up is a few seconds, but a replica killed without releasing its Lease makes the next
# one wait out the lease duration first.
START_TIMEOUT_S = 60.0


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

    def describe(self) -> str:
        state = "ready" if self.ready else "running" if self.running else "stopped"
        return f"operator pid {self.pid} ({state}), log {self.log_path}"


# -- locking -------------------------------------------------------------------------------

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()


@contextlib.contextmanager
def _cluster_lock(target: ClusterTarget) -> Iterator[Path]:
    """Serialise operator management per cluster, across threads and processes."""
    directory = state_dir(target)
    directory.mkdir(parents=True, exist_ok=True)
    with _LOCKS_GUARD:
        lock = _LOCKS.setdefault(str(directory), threading.Lock())
    with lock, (directory / ".lock").open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield directory
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


# -- the webhook's address -------------------------------------------------------------------


def _settings(directory: Path) -> dict[str, Any]:
    try:
        data: dict[str, Any] = json.loads((directory / "settings.json").read_text())
        return data
    except (OSError, ValueError):
        return {}


def _save_settings(directory: Path, settings: dict[str, Any]) -> None:
    tmp = directory / "settings.json.tmp"
    tmp.write_text(json.dumps(settings, indent=2))
    tmp.replace(directory / "settings.json")


def _webhook_url(settings: dict[str, Any]) -> str | None:
    host, port = settings.get("webhook_host"), settings.get("webhook_port")
    return f"https://{host}:{port}" if host and port else None


# -- process management ---------------------------------------------------------------------


def _handle(target: ClusterTarget, directory: Path, info: ProcessInfo | None) -> OperatorHandle:
    running = is_running(info)
    return OperatorHandle(
        cluster=cluster_key(target),
        state_dir=directory,
        pid=info.pid if info else None,
        log_path=info.log_path if info else directory / f"{DEFAULT_INSTANCE}.log",
        running=running,
        ready=running and info is not None and is_ready(info),
        webhook_url=_webhook_url(_settings(directory)),
    )


def _start_locked(
    target: ClusterTarget, directory: Path, options: OperatorOptions | None
) -> OperatorHandle:
    info = read_process(directory)
    if not is_running(info):
        settings = _settings(directory)
        options = options or OperatorOptions()
        kubeconfig = directory / "kubeconfig.yaml"
        write_identity_kubeconfig(target, kubeconfig)
        info = spawn(
            directory,
            instance=DEFAULT_INSTANCE,
            kubeconfig=kubeconfig,
            health_port=free_port(),
            # Serve the webhook only where the API server was told to call it.
            webhook_port=settings.get("webhook_port") if _webhook_url(settings) else None,
            cert_dir=directory / "certs",
            options=options,
        )
        wait_ready(info, timeout=START_TIMEOUT_S + options.lease_duration)
    elif info is not None:
        wait_ready(info, timeout=START_TIMEOUT_S)
    return _handle(target, directory, info)


def install_operator(
    target: ClusterTarget,
    *,
    options: OperatorOptions | None = None,
    webhook_host: str | None = None,
) -> OperatorHandle:
    """Install the CRD, RBAC and webhook configuration, then start the local operator unless
    one runs for this cluster; return once it leads and watches. Idempotent."""
    with _cluster_lock(target) as directory:
        info = read_process(directory)
        if is_running(info) and info is not None and is_ready(info) and _crd_present(target):
            return _handle(target, directory, info)
        settings = _settings(directory)
        settings.setdefault("webhook_port", free_port())
        if webhook_host:
            settings["webhook_host"] = webhook_host
        elif is_local(target):
            settings["webhook_host"] = "127.0.0.1"
        _save_settings(directory, settings)
        hosts = sorted({"127.0.0.1", settings.get("webhook_host") or "127.0.0.1"})
        certs = ensure_certs(directory / "certs", hosts)
        apply_cluster_objects(target, certs=certs, webhook_url=_webhook_url(settings))
        return _start_locked(target, directory, options)


def start_operator(
    target: ClusterTarget, *, options: OperatorOptions | None = None
) -> OperatorHandle:
    """Start the local operator process if none runs (the cluster must be installed)."""
    with _cluster_lock(target) as directory:
        return _start_locked(target, directory, options)


def stop_operator(target: ClusterTarget, *, kill: bool = False) -> None:
    """Stop the local operator: SIGTERM (graceful, releases the Lease) or SIGKILL."""
    with _cluster_lock(target) as directory:
        info = read_process(directory)
        if info is not None:
            terminate(info, kill=kill)


def forget_operator(target: ClusterTarget) -> None:
    """Stop the cluster's local operator and drop its state (certs, token, log) — for a
    cluster that is going away, so no process or credential outlives it."""
    stop_operator(target)
    shutil.rmtree(state_dir(target), ignore_errors=True)


def operator_status(target: ClusterTarget) -> OperatorHandle | None:
    """The local operator of this cluster (None: never started here)."""
    directory = state_dir(target)
    info = read_process(directory)
    if info is None:
        return None
    return _handle(target, directory, info)


def _crd_present(target: ClusterTarget) -> bool:
    api = target.api_client()
    try:
        client.ApiextensionsV1Api(api).read_custom_resource_definition(CRD_NAME)
        return True
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise CompareError(
            f"reading the CRD {CRD_NAME} failed: {exc.status} {exc.reason}"
        ) from None
    finally:
        api.close()


# -- WebApps ---------------------------------------------------------------------------------


def _api_message(exc: client.ApiException) -> str:
    return status_message(exc) or f"{exc.status} {exc.reason}"


_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def check_namespace(namespace: str) -> None:
    if len(namespace) > 63 or not _DNS_LABEL.match(namespace):
        raise CompareError(
            f"namespace {namespace!r}: must be a DNS label (lower-case letters, digits, '-')"
        )


def _ensure_namespace(api: client.ApiClient, namespace: str) -> None:
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    try:
        client.CoreV1Api(api).create_namespace(body)
    except client.ApiException as exc:
        if exc.status != 409:
            raise CompareError(f"creating namespace {namespace}: {_api_message(exc)}") from None


def apply_webapp(api: client.ApiClient, webapp: WebApp, namespace: str) -> dict[str, Any]:
    """Server-side apply the CR; a rejection (schema, CEL, webhook) is a one-line error."""
    try:
        raw = client.CustomObjectsApi(api).patch_namespaced_custom_object(
            API_GROUP,
            API_VERSION,
            namespace,
            PLURAL,
            webapp.name,
            to_cr(webapp, namespace),
            field_manager=FIELD_MANAGER,
            force=True,
            _content_type="application/apply-patch+yaml",
            _preload_content=False,
        )
    except client.ApiException as exc:
        raise CompareError(
            f"{KIND} {namespace}/{webapp.name} rejected: {_api_message(exc)}"
        ) from None
    body: dict[str, Any] = json.loads(raw.data)
    return body


def _available(body: dict[str, Any]) -> bool:
    status = body.get("status") or {}
    if status.get("observedGeneration") != body["metadata"].get("generation"):
        return False
    return any(
        c.get("type") == "Available" and c.get("status") == "True"
        for c in status.get("conditions") or []
    )


def operator_manifest(webapp: WebApp, namespace: str) -> list[dict[str, Any]]:
    """The children the operator applies for this WebApp: what the judge holds them to.

    Built by the operator's own pure builders; the owner reference is identity, not desired
    state, so its uid is left empty here."""
    owner = owner_reference({"metadata": {"name": webapp.name, "uid": ""}})
    return [build_deployment(webapp, namespace, owner), build_service(webapp, namespace, owner)]


def deploy_operator(
    target: ClusterTarget,
    webapp: WebApp,
    namespace: str,
    *,
    timeout: float = 120.0,
    cancel: threading.Event | None = None,
) -> None:
    """Install (if needed) and run the operator, apply the WebApp CR, wait until its Available
    condition holds for the current generation and the live objects match the spec."""
    check_namespace(namespace)
    started = time.monotonic()
    handle = install_operator(target)
    api = target.api_client()
    try:
        _ensure_namespace(api, namespace)
        apply_webapp(api, webapp, namespace)
        custom = client.CustomObjectsApi(api)
        deadline = started + timeout
        while True:
            body = custom.get_namespaced_custom_object(
                API_GROUP,
                API_VERSION,
                namespace,
                PLURAL,
                webapp.name,
                _request_timeout=REQUEST_TIMEOUT,
            )
            if _available(body):
                break
            if time.monotonic() > deadline:
                phase = (body.get("status") or {}).get("phase") or "no status yet"
                raise CompareError(
                    f"{KIND} {namespace}/{webapp.name} not Available within {timeout:.0f}s "
                    f"(phase {phase}; operator log {handle.log_path})",
                    exit_code=EXIT_FAILED,
                )
            if cancel is None:
                time.sleep(POLL_S)
            elif cancel.wait(POLL_S):
                raise WaitCancelled(f"{KIND} {namespace}/{webapp.name}: cancelled")
        remaining = max(1.0, deadline - time.monotonic())
        desired = with_api_defaults(api, namespace, operator_manifest(webapp, namespace))
        wait_for_desired_state(
            api, namespace, desired, timeout=remaining, what=f"{KIND} (operator)", cancel=cancel
        )
    finally:
        api.close()


def undeploy_operator(
    target: ClusterTarget, namespace: str, *, name: str, timeout: float = 60.0
) -> None:
    """Delete the WebApp CR and wait until it is gone: the finalizer's cleanup has run (the
    operator is started if needed) and the garbage collector takes the children."""
    api = target.api_client()
    custom = client.CustomObjectsApi(api)
    try:
        try:
            custom.delete_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, name)
        except client.ApiException as exc:
            if exc.status == 404:
                return
            raise CompareError(f"deleting {KIND} {namespace}/{name}: {_api_message(exc)}") from None
        status = operator_status(target)
        if status is None or not status.running:
            start_operator(target)  # only the operator can run the finalizer
        deadline = time.monotonic() + timeout
        while True:
            try:
                custom.get_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL, name)
            except client.ApiException as exc:
                if exc.status == 404:
                    return
                raise CompareError(
                    f"reading {KIND} {namespace}/{name}: {_api_message(exc)}"
                ) from None
            if time.monotonic() > deadline:
                raise CompareError(
                    f"{KIND} {namespace}/{name} still present {timeout:.0f}s after deletion "
                    f"(finalizer not removed; operator log {state_dir(target)})",
                    exit_code=EXIT_FAILED,
                )
            time.sleep(POLL_S)
    finally:
        api.close()
