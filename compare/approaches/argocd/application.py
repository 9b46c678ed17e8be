"""An Argo CD `Application` of a chart: what the real application controller reconciles.

    chart_application   the Application of any chart (its source, values and release name),
                        destination the in-cluster API server and the trial's namespace,
                        automated sync with selfHeal and prune
    wait_application    until Argo CD reports it Synced (to this spec's revision) and Healthy;
                        a failed sync operation or a controller that is down is a one-line error
    delete_application  delete it (its resources finalizer makes Argo CD delete what it
                        deployed first) and wait until it is gone

Each Application lives in the namespace it deploys into, named after the release (Argo CD's
"applications in any namespace": the controller runs with `--application-namespaces=*` and the
default AppProject accepts every source namespace). So a trial's namespace holds its
Application, and Argo CD's Events about it, beside the objects it keeps.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

from kubernetes import client

from compare.approaches.argocd.controllers import check_running
from compare.approaches.argocd.install import ARGOCD_NAMESPACE, DEFAULT_PROJECT
from compare.cluster import ClusterTarget
from compare.deploy.install import apply_documents
from compare.errors import EXIT_FAILED, CompareError
from compare.judge import REQUEST_TIMEOUT
from compare.kube.apierror import delete_if_found, if_found
from compare.kube.served import Served
from compare.kube.wait import wait_for, wait_until_gone

# Applications as the API server serves them (Argo CD's CRD: known, no discovery needed).
APPLICATIONS = Served("argoproj.io/v1alpha1", "Application", "applications", namespaced=True)
IN_CLUSTER = "https://kubernetes.default.svc"
# Deleting the Application deletes what it deployed first (Argo CD's own finalizer).
RESOURCES_FINALIZER = "resources-finalizer.argocd.argoproj.io"
FIELD_MANAGER = "compare"
# Argo CD's diff strategies, set per Application: its default three-way diff (live against the
# last-applied configuration and the rendered manifest) or the API server's dry-run apply.
THREE_WAY_DIFF = "three-way"
SERVER_SIDE_DIFF = "server-side"
COMPARE_OPTIONS = "argocd.argoproj.io/compare-options"
POLL_S = 0.2
# How often the controllers' health is looked at during a wait (each look is an HTTP request).
HEALTH_EVERY_S = 2.0


def instance_name(namespace: str, name: str) -> str:
    """How Argo CD names an Application in its tracking annotations and logs: qualified by its
    namespace when that is not the controller's own."""
    return name if namespace == ARGOCD_NAMESPACE else f"{namespace}_{name}"


def chart_application(
    namespace: str,
    *,
    release: str,
    source: Mapping[str, Any],
    values: Mapping[str, Any],
    self_heal: bool = True,
    diff: str = THREE_WAY_DIFF,
) -> dict[str, Any]:
    """The Application of any chart: `source` says where the repo-server fetches it (repoURL,
    chart, targetRevision), rendered with `values` as release `release` into `namespace`."""
    metadata: dict[str, Any] = {
        "name": release,
        "namespace": namespace,
        "finalizers": [RESOURCES_FINALIZER],
    }
    if diff == SERVER_SIDE_DIFF:
        metadata["annotations"] = {COMPARE_OPTIONS: "ServerSideDiff=true"}
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "Application",
        "metadata": metadata,
        "spec": {
            "project": DEFAULT_PROJECT,
            "source": {
                **source,
                "helm": {"releaseName": release, "valuesObject": dict(values)},
            },
            "destination": {"server": IN_CLUSTER, "namespace": namespace},
            "syncPolicy": {"automated": {"selfHeal": self_heal, "prune": True}},
        },
    }


def apply_application(cluster: ClusterTarget, application: Mapping[str, Any]) -> None:
    apply_documents(cluster, [dict(application)], field_manager=FIELD_MANAGER)


def _call(
    api: client.ApiClient, method: str, doing: str, namespace: str, name: str, *body: Any
) -> Any:
    """One call of the custom objects API on an Application (`method`: `get`, `patch`,
    `delete`); None (delete: False) when it is not there, any other refusal a one-line error
    `<doing> Application <namespace>/<name> failed: <status> <reason>`."""
    group, version = APPLICATIONS.api_version.split("/")
    return (delete_if_found if method == "delete" else if_found)(
        f"{doing} Application {namespace}/{name} failed",
        getattr(client.CustomObjectsApi(api), f"{method}_namespaced_custom_object"),
        group,
        version,
        namespace,
        APPLICATIONS.plural,
        name,
        *body,
        _request_timeout=REQUEST_TIMEOUT,
    )


def read_application(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = _call(api, "get", "reading", namespace, name)
    return found


def application_state(app: Mapping[str, Any] | None) -> tuple[bool | None, str]:
    """(True: Synced to its spec's revision, Healthy, no operation running; False: its sync
    operation failed; None: not yet), and why. Pure: reads the Application's status only."""
    if app is None:
        return None, "waiting for the Application"
    spec = app.get("spec") or {}
    status = app.get("status") or {}
    sync = status.get("sync") or {}
    health = (status.get("health") or {}).get("status")
    operation = status.get("operationState") or {}
    if operation.get("phase") in {"Failed", "Error"}:
        message = str(operation.get("message") or "").splitlines()
        return False, f"sync {operation['phase']}: {message[0] if message else 'no message'}"
    refused = [
        r
        for r in (operation.get("syncResult") or {}).get("resources") or []
        if r.get("status") == "SyncFailed"
    ]
    if operation.get("phase") == "Running" and operation.get("retryCount") and refused:
        # Argo CD retries a failed automated sync (5 times by default, minutes of backoff):
        # an object the API server refused is a failed deploy now, not after the retries.
        first = refused[0]
        message = str(first.get("message") or "").splitlines()
        return False, (
            f"sync failed, retrying: {first.get('kind')} {first.get('name')}: "
            f"{message[0] if message else 'no message'}"
        )
    errors = [
        str(c.get("message") or "").splitlines()[0]
        for c in status.get("conditions") or []
        if str(c.get("type", "")).endswith("Error") and c.get("message")
    ]
    if errors:
        # ComparisonError, InvalidSpecError, ...: the controller cannot even diff.
        return None, errors[0]
    wanted = (spec.get("source") or {}).get("targetRevision")
    if sync.get("status") != "Synced" or (wanted and sync.get("revision") != wanted):
        return None, f"sync {sync.get('status') or 'unknown'}"
    if health != "Healthy":
        return None, f"Synced, health {health or 'unknown'}"
    if operation and operation.get("phase") not in {"Succeeded"}:
        # Right after its first sync Argo CD may start a second one (its comparison from
        # before the sync still said OutOfSync): settled means no operation running.
        return None, f"Synced and Healthy, operation {operation.get('phase')}"
    return True, "Synced and Healthy"


def wait_application(
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    timeout: float,
    cancel: threading.Event | None = None,
) -> dict[str, Any]:
    """Until the Application is Synced and Healthy; its last reading. A failed sync, a deadline
    passed, or an Argo CD process (Redis included) found down: a one-line error."""
    health = _HealthEvery(cluster)

    def look() -> tuple[bool | None, str, dict[str, Any] | None]:
        # First: with Argo CD down, the status read next is a stale record, not an answer.
        health.check()
        app = read_application(api, namespace, name)
        state, text = application_state(app)
        if state is False:
            raise CompareError(
                f"Application {namespace}/{name} failed: {text}", exit_code=EXIT_FAILED
            )
        return state, text, app

    _, _, app = wait_for(
        look,
        deadline=timeout,
        done=lambda seen: seen[0] is True and seen[2] is not None,
        timed_out=lambda seen: CompareError(
            f"Application {namespace}/{name} was not Synced and Healthy within "
            f"{timeout:.0f}s ({seen[1]})",
            exit_code=EXIT_FAILED,
        ),
        interval=POLL_S,
        cancel=cancel,
        what=f"Application {namespace}/{name}",
    )
    assert app is not None  # `done` says so
    return app


class _HealthEvery:
    """`check_running` at most every HEALTH_EVERY_S, from inside a wait's look."""

    def __init__(self, cluster: ClusterTarget) -> None:
        self.cluster, self.checked = cluster, 0.0

    def check(self) -> bool:
        if time.monotonic() - self.checked <= HEALTH_EVERY_S:
            return False
        check_running(self.cluster)
        self.checked = time.monotonic()
        return True


def delete_application(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, name: str, *, timeout: float
) -> bool:
    """Delete the Application and wait until Argo CD has deleted what it deployed and the
    Application is gone. False: there was none. Argo CD deletes an Application only once its
    operation has ended, so its automated sync is turned off first (no new sync starts) and a
    sync still running (retrying a failure) is terminated, as `argocd app terminate-op` does -
    again while the deletion waits, since a retry may be under way when the first one lands."""
    app = read_application(api, namespace, name)
    if app is None:
        return False
    off = {"spec": {"syncPolicy": {"automated": None}}}
    _call(api, "patch", "turning off the automated sync of", namespace, name, off)
    _terminate_operation(api, namespace, name, app)
    if not _call(api, "delete", "deleting", namespace, name):
        return False
    health = _HealthEvery(cluster)

    def left() -> list[str]:
        app = read_application(api, namespace, name)
        # Its finalizer is the controller's: with Argo CD down it never goes.
        if app is not None and health.check():
            _terminate_operation(api, namespace, name, app)
        return [] if app is None else [f"Application {namespace}/{name}"]

    wait_until_gone(
        left,
        deadline=timeout,
        timed_out=lambda _: CompareError(
            f"Application {namespace}/{name} was still present {timeout:.0f}s after its deletion",
            exit_code=EXIT_FAILED,
        ),
        interval=POLL_S,
    )
    return True


def _terminate_operation(
    api: client.ApiClient, namespace: str, name: str, app: dict[str, Any]
) -> None:
    """Ask Argo CD to end the Application's running sync operation (what `argocd app
    terminate-op` writes); nothing when none runs."""
    operation = (app.get("status") or {}).get("operationState") or {}
    if operation.get("phase") != "Running":
        return
    terminating = {"status": {"operationState": {"phase": "Terminating"}}}
    _call(api, "patch", "terminating the sync of", namespace, name, terminating)
