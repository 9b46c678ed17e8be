"""The Flux controllers: the toolkit's local Helm repository and the real Flux
source-controller and helm-controller, started per cluster, and the HelmRelease they reconcile.

    start_flux     package + index charts/webapp, serve the repository on 127.0.0.1, install
                   the CRDs and the controllers' identities, start both controllers under them
    wait_helm_release_ready
                   until helm-controller reports a HelmRelease Ready (or failed) for its spec
    FLUX           stop, forget or look at the three processes (`Controllers`)

Every chart, the built-in WebApp's included, is deployed as a target file's `flux` arm
(`compare.approaches.flux.arm`). One set of processes per cluster, serialised by a file lock.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes import client

from compare.approaches.flux.install import (
    CONTROLLERS,
    FLUX_NAMESPACE,
    HELM_CONTROLLER,
    SOURCE_CONTROLLER,
    apply_flux_objects,
    check_flux_binaries,
    delete_flux_objects,
    flux_binary,
)
from compare.cluster import ClusterTarget
from compare.deploy.chart_server import CHART_SERVER, serve_charts
from compare.deploy.charts import CHART_NAME
from compare.deploy.install import write_identity_kubeconfig
from compare.deploy.local import free_port
from compare.deploy.processes import (
    Controllers,
    LocalProcess,
    ProcessSet,
    alive,
    spawn,
    wait_ready,
)
from compare.errors import EXIT_FAILED, CompareError
from compare.judge import REQUEST_TIMEOUT
from compare.kube import Deadline, served, wait_for
from compare.kube.apierror import if_found
from compare.kube.served import Served

HELM_RELEASES = Served("helm.toolkit.fluxcd.io/v2", "HelmRelease", "helmreleases", namespaced=True)
PROCESSES = (CHART_SERVER, SOURCE_CONTROLLER, HELM_CONTROLLER)
FIELD_MANAGER = "compare"
DEFAULT_INTERVAL_S = 5.0
# helm-controller's `--interval-jitter-percentage` (fluxcd/pkg/runtime's default, 5; not set
# here): each requeue lands anywhere in interval +/- 5 %.
INTERVAL_JITTER = 0.05
START_TIMEOUT_S = 60.0
# helm-controller's reconcile workers (its default: 4). An install holds a worker until the
# release's objects are ready (seconds each), so with 4 workers a run's 24 simultaneous installs
# queued every other HelmRelease's reconcile for ~40 s (measured): the heal times measured the
# queue, not the interval. One worker per trial of the default run keeps them apart.
HELM_CONTROLLER_CONCURRENT = 24
POLL_S = 0.2


# -- state ------------------------------------------------------------------------------------


def format_interval(seconds: float) -> str:
    """A Go duration Flux accepts (whole milliseconds)."""
    millis = max(1, round(seconds * 1000))
    return f"{millis // 1000}s" if millis % 1000 == 0 else f"{millis}ms"


def interval_cadence(interval: float) -> tuple[float, str]:
    """The longest helm-controller may wait before it looks at a drifted release: a fault
    made just after a reconcile waits for the next one, one jittered interval later."""
    seconds = round(interval * (1 + INTERVAL_JITTER), 3)
    return seconds, (f"HelmRelease interval {interval:g} s + {INTERVAL_JITTER * 100:g} % jitter")


def check_interval(interval: float, heal_window: float) -> None:
    """Flux corrects drift at its next reconcile: a window shorter than one interval cannot see
    a heal, so it is a usage error."""
    if interval <= 0:
        raise CompareError(f"--flux-interval {interval:g}: must be positive")
    if interval >= heal_window:
        raise CompareError(
            f"--flux-interval {interval:g}s must be shorter than the heal window "
            f"({heal_window:g}s): helm-controller corrects drift only at its next reconcile"
        )


# -- the processes ------------------------------------------------------------------------------


def start_flux(
    target: ClusterTarget,
    *,
    bin_dir: Path | None = None,
    extra_args: Mapping[str, list[str]] | None = None,
    timeout: float = START_TIMEOUT_S,
) -> ProcessSet:
    """Start what is not running (idempotent). A process started here that does not become
    ready is stopped again, with every other one started by this call, before the error.
    `extra_args` adds flags per controller (e.g. `--concurrent`)."""
    return FLUX.start(
        target, launch=partial(_launch, bin_dir=bin_dir, extra_args=extra_args, timeout=timeout)
    )


def _launch(
    target: ClusterTarget,
    directory: Path,
    handle: ProcessSet,
    settings: dict[str, Any],
    started: list[LocalProcess],
    *,
    bin_dir: Path | None = None,
    extra_args: Mapping[str, list[str]] | None = None,
    timeout: float = START_TIMEOUT_S,
) -> None:
    """Start what of the chart server and the controllers is not running (`Controllers.start`
    holds the lock; this call's flags are bound by `start_flux`)."""
    check_flux_binaries(bin_dir)
    binaries = {name: flux_binary(name, bin_dir) for name in CONTROLLERS}
    apply_flux_objects(target)
    running = {n: p for n, p in handle.processes.items() if alive(p)}
    if CHART_SERVER not in running:
        # The port used before, when it is still free: the HelmRepositories name it.
        old = settings.get("chart_port")
        port = free_port(old if isinstance(old, int) else None)
        info = serve_charts(directory, port)
        started.append(info)
        wait_ready(info, timeout)
        settings["chart_port"] = port
    for name in CONTROLLERS:
        if name in running:
            continue
        kubeconfig = directory / f"{name}.kubeconfig"
        write_identity_kubeconfig(target, FLUX_NAMESPACE, name, kubeconfig)
        ports = {"metrics": free_port(), "health": free_port()}
        args = [
            str(binaries[name]),
            f"--metrics-addr=127.0.0.1:{ports['metrics']}",
            f"--health-addr=127.0.0.1:{ports['health']}",
            "--enable-leader-election=false",
            "--log-level=info",
            *([f"--concurrent={HELM_CONTROLLER_CONCURRENT}"] if name == HELM_CONTROLLER else []),
            *(extra_args or {}).get(name, []),
        ]
        if name == SOURCE_CONTROLLER:
            ports["storage"] = free_port()
            storage = directory / "storage"
            storage.mkdir(exist_ok=True)
            args += [
                f"--storage-addr=127.0.0.1:{ports['storage']}",
                f"--storage-adv-addr=127.0.0.1:{ports['storage']}",
                f"--storage-path={storage}",
            ]
        home = directory / "home"
        home.mkdir(exist_ok=True)
        info = spawn(
            directory,
            name,
            args,
            marker=str(binaries[name]),
            ready_url=f"http://127.0.0.1:{ports['health']}/readyz",
            env={
                "KUBECONFIG": str(kubeconfig),
                "RUNTIME_NAMESPACE": FLUX_NAMESPACE,
                "HOME": str(home),
            },
        )
        started.append(info)
        wait_ready(info, timeout)


# The chart server, then both controllers (stopped in reverse).
FLUX = Controllers(area="flux/clusters", names=PROCESSES, launch=_launch)


def remove_flux(target: ClusterTarget) -> None:
    """Stop the processes and delete their identities from the cluster (the CRDs stay)."""
    FLUX.stop(target)
    delete_flux_objects(target)


# -- the HelmRelease ---------------------------------------------------------------------------


def read_custom(
    api: client.ApiClient, kind: Served, namespace: str, name: str
) -> dict[str, Any] | None:
    """A namespaced custom object (None: there is none)."""
    found: dict[str, Any] | None = if_found(
        f"reading {kind.kind} {namespace}/{name} failed", served.read, api, kind, namespace, name
    )
    return found


def read_helm_release(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    return read_custom(api, HELM_RELEASES, namespace, name)


def condition(obj: Mapping[str, Any] | None, kind: str) -> dict[str, Any] | None:
    for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
        if cond.get("type") == kind:
            found: dict[str, Any] = cond
            return found
    return None


def _ready_now(obj: Mapping[str, Any] | None) -> tuple[bool | None, str]:
    """(True: Ready for this generation; False: failed for it; None: not yet), and why."""
    if obj is None:
        return None, "waiting for the HelmRelease"
    ready = condition(obj, "Ready")
    generation = (obj.get("metadata") or {}).get("generation")
    observed = (obj.get("status") or {}).get("observedGeneration")
    if ready is None or observed != generation:
        return None, "waiting for helm-controller"
    message = str(ready.get("message") or ready.get("reason") or "").splitlines()
    text = message[0] if message else ""
    if ready.get("status") == "True":
        return True, text
    stalled = condition(obj, "Stalled")
    if ready.get("status") == "False" and (
        (stalled is not None and stalled.get("status") == "True")
        or ready.get("reason") in {"InstallFailed", "UpgradeFailed", "ArtifactFailed"}
    ):
        return False, f"{ready.get('reason')}: {text}"
    return None, f"{ready.get('reason')}: {text}" if ready.get("reason") else "reconciling"


def wait_helm_release_ready(
    api: client.ApiClient,
    namespace: str,
    name: str,
    *,
    timeout: float,
    started: float | None = None,
    cancel: threading.Event | None = None,
) -> None:
    def look() -> tuple[bool | None, str]:
        state, text = _ready_now(read_helm_release(api, namespace, name))
        if state is False:
            raise CompareError(
                f"HelmRelease {namespace}/{name} failed: {text}", exit_code=EXIT_FAILED
            )
        return state, text

    wait_for(
        look,
        deadline=Deadline(timeout, started=started),
        done=lambda look: look[0] is True,
        timed_out=lambda look: CompareError(
            f"HelmRelease {namespace}/{name} was not Ready within {timeout:.0f}s ({look[1]})",
            exit_code=EXIT_FAILED,
        ),
        interval=POLL_S,
        cancel=cancel,
        what=f"HelmRelease {namespace}/{name}",
    )


def list_helm_releases(api: client.ApiClient, namespace: str | None) -> list[dict[str, Any]]:
    """HelmReleases of charts/webapp, in one namespace or all; none when the Flux CRDs are
    not installed."""
    return [
        obj
        for obj in served.listed(api, HELM_RELEASES, namespace)
        if (((obj.get("spec") or {}).get("chart") or {}).get("spec") or {}).get("chart")
        == CHART_NAME
    ]


def last_drift_event(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any] | None:
    """helm-controller's newest DriftDetected Event for this HelmRelease (None: none yet)."""
    events = client.CoreV1Api(api).list_namespaced_event(
        namespace,
        field_selector=f"involvedObject.kind=HelmRelease,involvedObject.name={name},"
        "reason=DriftDetected",
        _request_timeout=REQUEST_TIMEOUT,
    )
    newest = None
    for event in events.items:
        when = event.last_timestamp or event.event_time or event.metadata.creation_timestamp
        if newest is None or (when and when > newest[0]):
            newest = (when, event)
    if newest is None:
        return None
    when, event = newest
    return {"time": when, "message": (event.message or "").splitlines(), "count": event.count}
