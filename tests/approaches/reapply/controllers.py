"""Starting and stopping the reapply approach's controller (`controller.py`), one per cluster,
with the toolkit's local-process mechanics (`compare.deploy.local`, `compare.deploy.processes`):
a state directory per cluster (`state_dir`, keyed like every approach's), the process in a
session of its own with its log and record there, a start that fails stopping what it started.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
from pathlib import Path

from compare.cluster import ClusterTarget
from compare.deploy.local import claim_for_cluster, cluster_uid, state_lock
from compare.deploy.operator_install import cluster_key
from compare.deploy.processes import (
    LocalProcess,
    alive,
    forget,
    read_process,
    spawn,
    starting,
    terminate,
    wait_ready,
)
from compare.paths import cache_dir
from tests.approaches.reapply.controller import HEARTBEAT

NAME = "reapply-controller"
SCRIPT = Path(__file__).with_name("controller.py")
# The checkout the controller imports `compare` and `manifests` from: this one.
ROOT = Path(__file__).resolve().parents[3]
INTERVAL_S = 2.0
START_TIMEOUT_S = 30.0


def state_dir(cluster: ClusterTarget) -> Path:
    """Where the cluster's controller keeps its record, log, heartbeat and manifests."""
    return cache_dir() / "reapply" / cluster_key(cluster)


def running(cluster: ClusterTarget) -> LocalProcess | None:
    """The cluster's controller, when it runs."""
    info = read_process(state_dir(cluster), NAME)
    return info if info is not None and alive(info) else None


def start(cluster: ClusterTarget) -> LocalProcess:
    """The cluster's controller, started unless it runs (after its first pass: ready)."""
    directory = state_dir(cluster)
    with state_lock(directory):
        found = running(cluster)
        if found is not None:
            return found
        # State left by an earlier cluster of this name: its manifests are not this one's.
        claim_for_cluster(directory, cluster_uid(cluster), lambda: None)
        args = [
            sys.executable, str(SCRIPT), "--kubeconfig", str(cluster.kubeconfig),
            *(("--context", cluster.context) if cluster.context else ()),
            "--state", str(directory), "--interval", f"{INTERVAL_S:g}",
            "--owner", str(os.getpid()),
        ]  # fmt: skip
        path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
        (directory / HEARTBEAT).unlink(missing_ok=True)
        with starting(directory) as started:
            info = spawn(directory, NAME, args, marker=str(SCRIPT), ready_url="",
                         env={"PYTHONPATH": path})  # fmt: skip
            started.append(info)
            wait_ready(info, START_TIMEOUT_S, ready=lambda _: (directory / HEARTBEAT).exists())
        return info


def stop(cluster: ClusterTarget, *, forget_state: bool = False) -> bool:
    """Stop the cluster's controller (whether one ran); `forget_state`: drop its directory
    too, stored manifests included."""
    directory = state_dir(cluster)
    with state_lock(directory):
        info = read_process(directory, NAME)
        was = info is not None and alive(info)
        if info is not None:
            terminate(info)
            forget(directory, NAME)
    if forget_state:
        shutil.rmtree(directory, ignore_errors=True)
        with contextlib.suppress(OSError):  # the approach's folder, when no cluster has one
            directory.parent.rmdir()
    return was
