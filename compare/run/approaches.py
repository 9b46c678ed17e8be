"""The approaches behind one interface: prepare once, deploy into a namespace, remove.

`remove` runs before the trial's namespace is deleted: the operator's WebApp carries a
finalizer only the running operator clears, so its CR goes first; a Helm release needs
nothing (its objects and release record live in the namespace); a Flux HelmRelease and its
HelmRepository carry finalizers the running controllers clear, so they go first too.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from compare.cluster import ClusterTarget
from compare.deploy import flux as flux_path
from compare.deploy import operator as operator_path
from compare.deploy.helm import deploy_helm
from compare.errors import CompareError
from compare.webapp import WebApp


@dataclass(frozen=True)
class Approach:
    name: str
    prepare: Callable[[ClusterTarget], None]
    deploy: Callable[[ClusterTarget, WebApp, str, threading.Event | None], None]
    remove: Callable[[ClusterTarget, WebApp, str], None]
    # Whether the approach announces corrections with Events (time-to-detect observable).
    posts_events: bool


def _nothing(target: ClusterTarget) -> None:
    return None


def _helm_deploy(
    target: ClusterTarget, webapp: WebApp, namespace: str, cancel: threading.Event | None
) -> None:
    deploy_helm(target, webapp, namespace, cancel=cancel)


def _helm_remove(target: ClusterTarget, webapp: WebApp, namespace: str) -> None:
    return None


def _operator_prepare(target: ClusterTarget) -> None:
    operator_path.install_operator(target)


def _operator_deploy(
    target: ClusterTarget, webapp: WebApp, namespace: str, cancel: threading.Event | None
) -> None:
    operator_path.deploy_operator(target, webapp, namespace, cancel=cancel)


def _operator_remove(target: ClusterTarget, webapp: WebApp, namespace: str) -> None:
    ensure_operator_running(target)
    operator_path.undeploy_operator(target, namespace, name=webapp.name)


# The HelmRelease interval of the flux approach in this process's runs (`--flux-interval`):
# set by the run before it deploys anything (`configure_flux`).
_FLUX = {"interval": flux_path.DEFAULT_INTERVAL_S}


def configure_flux(interval: float) -> None:
    _FLUX["interval"] = interval


def flux_interval() -> float:
    return _FLUX["interval"]


def _flux_prepare(target: ClusterTarget) -> None:
    flux_path.start_flux(target)


def _flux_deploy(
    target: ClusterTarget, webapp: WebApp, namespace: str, cancel: threading.Event | None
) -> None:
    flux_path.deploy_flux(target, webapp, namespace, interval=flux_interval(), cancel=cancel)


def _flux_remove(target: ClusterTarget, webapp: WebApp, namespace: str) -> None:
    flux_path.undeploy_flux(target, namespace, release=webapp.name)


def ensure_operator_running(target: ClusterTarget) -> None:
    """Start the shared operator when it is not running (after operator-down-drift)."""
    status = operator_path.operator_status(target)
    if status is None or not status.running:
        operator_path.start_operator(target)


APPROACHES: dict[str, Approach] = {
    "helm": Approach("helm", _nothing, _helm_deploy, _helm_remove, posts_events=False),
    "operator": Approach(
        "operator", _operator_prepare, _operator_deploy, _operator_remove, posts_events=True
    ),
    # helm-controller posts a DriftDetected Event on the HelmRelease before it corrects.
    "flux": Approach("flux", _flux_prepare, _flux_deploy, _flux_remove, posts_events=True),
}


def approach(name: str) -> Approach:
    try:
        return APPROACHES[name]
    except KeyError:
        raise CompareError(
            f"--approach {name!r}: unknown approach (known: {', '.join(APPROACHES)})"
        ) from None
