"""The reapply approach's controller (`controller.py`), one per cluster, on the toolkit's one
lifecycle of local controllers (`compare.deploy.processes.Controllers`: lock, claim, start,
status, stop, forget), configured here by data alone: its state area, its one process, how it
is launched and when it is ready (after its first pass: a heartbeat).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from compare.cluster import ClusterTarget
from compare.deploy.processes import Controllers, LocalProcess, ProcessSet, spawn, wait_ready
from tests.approaches.reapply.controller import HEARTBEAT

NAME = "reapply-controller"
SCRIPT = Path(__file__).with_name("controller.py")
# The checkout the controller imports `compare` and `manifests` from: this one.
ROOT = Path(__file__).resolve().parents[3]
INTERVAL_S = 2.0
START_TIMEOUT_S = 30.0


def _ready(info: LocalProcess) -> bool:
    return (Path(info.log_path).parent / HEARTBEAT).exists()


def _launch(
    cluster: ClusterTarget,
    directory: Path,
    found: ProcessSet,
    settings: dict[str, Any],
    started: list[LocalProcess],
) -> None:
    args = [
        sys.executable, str(SCRIPT), "--kubeconfig", str(cluster.kubeconfig),
        *(("--context", cluster.context) if cluster.context else ()),
        "--state", str(directory), "--interval", f"{INTERVAL_S:g}",
        "--owner", str(os.getpid()),
    ]  # fmt: skip
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    (directory / HEARTBEAT).unlink(missing_ok=True)
    info = spawn(directory, NAME, args, marker=str(SCRIPT), ready_url="",
                 env={"PYTHONPATH": path})  # fmt: skip
    started.append(info)
    wait_ready(info, START_TIMEOUT_S, ready=_ready)


CONTROLLERS = Controllers(area="reapply", names=(NAME,), launch=_launch, ready=_ready)


def state_dir(cluster: ClusterTarget) -> Path:
    """Where the cluster's controller keeps its record, log, heartbeat and manifests."""
    return CONTROLLERS.state_dir(cluster)


def running(cluster: ClusterTarget) -> LocalProcess | None:
    """The cluster's controller, when it runs."""
    handle = CONTROLLERS.status(cluster)
    return handle.processes.get(NAME) if handle.running else None


def start(cluster: ClusterTarget) -> None:
    """The cluster's controller, started unless it runs (ready after its first pass)."""
    CONTROLLERS.start(cluster)
