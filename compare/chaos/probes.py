"""Probes: does the WebApp's desired state hold (the steady-state hypothesis of every experiment).

The desired state is the complete set of objects the approach deploys for the WebApp manifest
(`app_file`, default examples/webapp.yaml, as the built-in target; `approach` a registered
approach's name, default the first registered), judged closed-world by `compare.judge` exactly
as the trial engine judges it (`Approach.known_desired`). When `app_file` is a target file
(`compare run --target`), it is what the approach's arm deployed in the namespace
(`Approach.target_desired`): every object of the manifest of the release the run installed
(Helm, helm-controller), or the baseline of objects an operator's custom resources own,
stored in the namespace by the deploy.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare import approaches
from compare.chaos.cluster import api_client, cluster_target
from compare.deploy.chart_target import is_target_file
from compare.errors import CompareError, first_line
from compare.judge import (
    DEFAULT_SETTLE_S,
    DesiredObjects,
    problems,
    read,
    wait_until_holds,
    with_api_defaults,
)
from compare.webapp import load_webapp

__all__ = [
    "desired_state_holds",
    "desired_state_mismatches",
    "embedded_control_plane_runs",
    "wait_for_desired_state",
]

# Set by an in-process host (`compare run` on Ctrl-C) to cut `wait_for_desired_state` short.
cancelled = threading.Event()


def _desired(
    api: client.ApiClient, name: str, ns: str, app_file: str, approach: str, secrets: Any = None
) -> DesiredObjects:
    try:
        arm = approaches.get(approach) if approach else approaches.REGISTRY[0]
        if app_file and is_target_file(Path(app_file)):
            # `compare run --target`: what the trial's arm deployed in `ns`.
            target = approaches.load_target(Path(app_file))
            desired = arm.target_desired(cluster_target(secrets), api, target.for_trial(ns), ns)
            # The main parts the file names, as the trial's release names them: the trial's.
            return desired.with_parts(*target.part_names(arm.name, ns))
        webapp = load_webapp(Path(app_file) if app_file else None)
        if name and name != webapp.name:
            # The same spec deployed under another name (a user's `--var webapp_name=...`).
            webapp = webapp.model_copy(
                update={"metadata": webapp.metadata.model_copy(update={"name": name})}
            )
        # The built-in WebApp is a target like any other: what its arm applies in `ns`, known
        # without a cluster when the approach knows it, else what it deployed there.
        builtin = approaches.builtin_target(webapp).for_trial(ns)
        known = arm.known_desired(builtin, ns)
        if known is None:
            return arm.target_desired(cluster_target(secrets), api, builtin, ns)
        return with_api_defaults(api, ns, known)
    except CompareError as exc:
        raise ActivityFailed(exc.message) from exc
    except Exception as exc:  # the cluster did not answer the dry-run
        raise ActivityFailed(
            f"reading the desired state in {ns} failed: {first_line(exc)}"
        ) from exc


@contextmanager
def _reading(ns: str) -> Iterator[None]:
    """Any failure to read the namespace as chaoslib's ActivityFailed, in one line."""
    try:
        yield
    except client.ApiException as exc:
        raise ActivityFailed(f"reading {ns} failed: {exc.status} {exc.reason}") from exc
    except (ActivityFailed, InterruptedError):
        raise  # already one line / a cancelled wait
    except Exception as exc:  # timeouts, refused connections: one line, never a traceback
        raise ActivityFailed(f"reading {ns} failed: {first_line(exc)}") from exc


def _current(api: client.ApiClient, ns: str, desired: DesiredObjects) -> list[str]:
    with _reading(ns):
        return problems(desired, read(api, ns, desired.kinds))


def desired_state_mismatches(
    name: str = "",
    ns: str = "default",
    app_file: str = "",
    approach: str = "",
    secrets: Any = None,
) -> list[str]:
    """What keeps the desired state from holding (empty: it holds)."""
    api = api_client(secrets)
    try:
        return _current(api, ns, _desired(api, name, ns, app_file, approach, secrets))
    finally:
        api.close()


def desired_state_holds(
    name: str = "",
    ns: str = "default",
    app_file: str = "",
    approach: str = "",
    secrets: Any = None,
) -> bool:
    """True when every desired object matches closed-world and the rollout of the desired pod
    template is complete (exactly the desired pods Ready, none of an older template left)."""
    return not desired_state_mismatches(name, ns, app_file, approach, secrets)


def wait_for_desired_state(
    name: str = "",
    ns: str = "default",
    app_file: str = "",
    timeout: float = 10.0,
    interval: float = 0.5,
    approach: str = "",
    secrets: Any = None,
    configuration: Any = None,
) -> bool:
    """Wait until the desired state holds and has held for the settle period (True), or
    `timeout` seconds pass (False).

    The method's last step: it gives the system its heal window before chaostoolkit checks the
    steady-state hypothesis again, and returns once the state is back *and settled*: returning
    at the first instant it holds let the hypothesis read a rollout still finishing (an old pod
    still there) and call a settled heal deviated. The settle period is the configuration's
    `settle` (seconds; `compare run` sets its `--settle`), else 1 s, the judge's default. It
    watches the namespace (`interval` is kept for compatibility: the wait wakes on every
    change).
    """
    api = api_client(secrets)
    try:
        desired = _desired(api, name, ns, app_file, approach, secrets)
        try:
            with _reading(ns):
                found = wait_until_holds(
                    api,
                    ns,
                    desired,
                    timeout=float(timeout),
                    settle=_settle(configuration),
                    cancel=cancelled,
                )
        except InterruptedError:
            return False
        return not found
    finally:
        api.close()


def _settle(configuration: Any) -> float:
    value = (configuration or {}).get("settle", DEFAULT_SETTLE_S)
    try:
        settle = float(value)
    except (TypeError, ValueError):
        raise ActivityFailed(
            f"configuration settle: {value!r} is not a number of seconds"
        ) from None
    if settle < 0:
        raise ActivityFailed(f"configuration settle: {value!r} is negative")
    return settle


def embedded_control_plane_runs(secrets: Any = None) -> bool:
    """True when the activity is pointed at the embedded cluster and every component of its
    control plane runs; False on any other cluster.

    The steady-state hypothesis of the control-plane experiments: on another cluster the
    hypothesis fails before the method, so `chaos run` injects nothing there."""
    # Imported here: the probes of every other experiment do not need it.
    from compare.chaos.control_plane import embedded_cluster
    from compare.cluster.embedded import COMPONENTS

    try:
        cluster = embedded_cluster(secrets)
    except ActivityFailed:
        return False
    return all(cluster.component_pid(name) is not None for name in COMPONENTS)
