"""Probes: does the WebApp's desired state hold (the steady-state hypothesis of every experiment).

The desired state comes from a WebApp manifest (`app_file`, default examples/webapp.yaml) and is
judged by `compare.chaos.state.problems` (`compare_live` plus the pods themselves), exactly as
the trial engine judges it.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from chaoslib.exceptions import ActivityFailed
from kubernetes import client

from compare.chaos.cluster import api_client
from compare.chaos.state import problems, read_snapshot
from compare.errors import CompareError
from compare.webapp import DesiredState, desired_state, load_webapp

__all__ = ["desired_state_holds", "desired_state_mismatches", "wait_for_desired_state"]

# Set by an in-process host (`compare run` on Ctrl-C) to cut `wait_for_desired_state` short.
cancelled = threading.Event()


def _desired(name: str, app_file: str) -> DesiredState:
    try:
        webapp = load_webapp(Path(app_file) if app_file else None)
    except CompareError as exc:
        raise ActivityFailed(exc.message) from exc
    if name and name != webapp.name:
        # The same spec deployed under another name (a user's `--var webapp_name=...`).
        webapp = webapp.model_copy(
            update={"metadata": webapp.metadata.model_copy(update={"name": name})}
        )
    return desired_state(webapp)


def _current(api: client.ApiClient, ns: str, desired: DesiredState) -> list[str]:
    try:
        return problems(read_snapshot(api, ns, desired), desired)
    except client.ApiException as exc:
        raise ActivityFailed(
            f"reading {ns}/{desired.name} failed: {exc.status} {exc.reason}"
        ) from exc


def desired_state_mismatches(
    name: str = "", ns: str = "default", app_file: str = "", secrets: Any = None
) -> list[str]:
    """What keeps the desired state from holding (empty: it holds)."""
    desired = _desired(name, app_file)
    api = api_client(secrets)
    try:
        return _current(api, ns, desired)
    finally:
        api.close()


def desired_state_holds(
    name: str = "", ns: str = "default", app_file: str = "", secrets: Any = None
) -> bool:
    """True when every owned field matches and exactly the desired pods of the current
    template are Ready (none terminating, none of an older template left)."""
    return not desired_state_mismatches(name, ns, app_file, secrets)


def wait_for_desired_state(
    name: str = "",
    ns: str = "default",
    app_file: str = "",
    timeout: float = 10.0,
    interval: float = 0.5,
    secrets: Any = None,
) -> bool:
    """Poll until the desired state holds (True) or `timeout` seconds pass (False).

    The method's last step: it gives the system its heal window before chaostoolkit checks the
    steady-state hypothesis again, and returns once the state is back. It is not the
    measurement (`compare run` observes on its own, more often), so it polls gently.
    """
    desired = _desired(name, app_file)
    deadline = time.monotonic() + float(timeout)
    api = api_client(secrets)
    try:
        while True:
            if not _current(api, ns, desired):
                return True
            if time.monotonic() >= deadline or cancelled.is_set():
                return False
            cancelled.wait(min(float(interval), max(deadline - time.monotonic(), 0.0)))
    finally:
        api.close()
