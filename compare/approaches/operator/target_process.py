"""A target's operator run by the toolkit as a local process (`operator.install.process`).

What its authors' `make run` does, with the lifecycle of the toolkit's own operator and of the
Flux and Argo CD controllers (`compare.deploy.processes.Controllers`): one process per target
name and cluster, recorded in `operator-process/<target>/<cluster>/operator.json` under the
cache, its output appended to `operator.log` there (kept after it stops), run under the
supervisor (`compare.deploy.supervise`: restarted when it exits with an error, as a kubelet
restarts a container), stopped with SIGTERM (SIGKILL for the faults that kill it).

It runs as a ServiceAccount of its own (`compare-operators/<target>-operator`, bound to
`cluster-admin`: `make run` runs with the developer's own, usually all-powerful, kubeconfig);
KUBECONFIG in its environment points at a kubeconfig with a fresh token of it
(`compare.deploy.install.write_identity_kubeconfig`, written at every start). The toolkit knows
nothing of its health endpoint: it is started once it has run for `SETTLE_S` without its
supervisor restarting it (a restart then is a start-up error, said at once); once started,
running is enough (a later failure is its supervisor's to restart).
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes import client

from compare.cluster import ClusterTarget, cluster_key
from compare.deploy.install import apply_documents, write_identity_kubeconfig
from compare.deploy.processes import (
    Controllers,
    LocalProcess,
    ProcessSet,
    alive,
    last_log_line,
    spawn,
    wait_ready,
)
from compare.errors import EXIT_FAILED, CompareError
from compare.kube.apierror import delete_if_found
from compare.paths import cache_dir
from compare.target import OperatorCommand

__all__ = ["AREA", "TargetProcess", "forget_all"]

AREA = "operator-process"
NAME = "operator"
# What its recorded pid's command line names: the supervisor it runs under.
MARKER = "compare.deploy.supervise"
NAMESPACE = "compare-operators"
FIELD_MANAGER = "compare-operator-process"
# Started: alive this long with no restart by its supervisor (a command that fails at once is
# restarted within a second).
SETTLE_S = 3.0
START_TIMEOUT_S = 30.0


def service_account(target: str) -> str:
    return f"{target}-operator"


def binding_name(target: str) -> str:
    return f"compare-operator-{target}"


# What the supervisor writes into the log (`compare.deploy.supervise`) when it restarts it.
SUPERVISOR = "supervisor: "


def _current_start(info: LocalProcess) -> str:
    """The log of its newest start (each start is appended after a `--- ` line)."""
    try:
        text = info.log_path.read_text(errors="replace")
    except OSError:
        return ""
    return text.split("\n--- ")[-1]


def settled(info: LocalProcess) -> bool:
    """Started: alive for `SETTLE_S` without its supervisor restarting it. A restart during
    that time is its start-up failing (a bad flag, no such module): one line, at once."""
    if SUPERVISOR in _current_start(info):
        # Its own last words, not the supervisor's note that it restarts it.
        last = last_log_line(info.log_path, skip=SUPERVISOR)
        raise CompareError(
            f"it exited with an error right after its start: {last} (log {info.log})",
            exit_code=EXIT_FAILED,
        )
    return alive(info) and time.time() - info.started >= SETTLE_S


def _launch(
    command: OperatorCommand,
    target: str,
    cluster: ClusterTarget,
    directory: Path,
    _handle: ProcessSet,
    _settings: dict[str, Any],
    started: list[LocalProcess],
) -> None:
    kubeconfig = directory / "kubeconfig.yaml"
    write_identity_kubeconfig(
        cluster,
        NAMESPACE,
        service_account(target),
        kubeconfig,
        missing=f"the operator of {target} is not installed on {cluster.describe()}"
        f" (no ServiceAccount {NAMESPACE}/{service_account(target)}): deploy it first",
    )
    args = [sys.executable, "-m", MARKER, "--", *command.command]
    env = {"PYTHONUNBUFFERED": "1", **command.env, "KUBECONFIG": str(kubeconfig)}
    info = spawn(
        directory, NAME, args, marker=MARKER, ready_url="", env=env, cwd=command.working_dir
    )
    started.append(info)
    try:
        wait_ready(info, START_TIMEOUT_S, ready=settled)
    except CompareError as exc:
        raise CompareError(
            f"the operator of {target} ({' '.join(command.command)}): {exc.message}",
            exit_code=EXIT_FAILED,
        ) from None


@dataclass(frozen=True)
class TargetProcess:
    """The operator process of target `target` (its command), as `LocalControllers` (the
    faults that stop and start an operator act on it) and as its install starts it."""

    target: str
    command: OperatorCommand

    @property
    def controllers(self) -> Controllers:
        return Controllers(
            area=f"{AREA}/{self.target}",
            names=(NAME,),
            launch=partial(_launch, self.command, self.target),
            # Running is enough once started: its supervisor restarts it after a failure.
            ready=alive,
        )

    def install(self, cluster: ClusterTarget) -> None:
        """Its identity (ServiceAccount, cluster-admin binding) made, then the process started
        unless it runs already."""
        name = self.target
        rbac = "rbac.authorization.k8s.io"
        documents: list[dict[str, Any]] = [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
            {
                "apiVersion": "v1",
                "kind": "ServiceAccount",
                "metadata": {"name": service_account(name), "namespace": NAMESPACE},
            },
            {
                "apiVersion": f"{rbac}/v1",
                "kind": "ClusterRoleBinding",
                "metadata": {"name": binding_name(name)},
                "roleRef": {"apiGroup": rbac, "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [
                    {
                        "kind": "ServiceAccount",
                        "name": service_account(name),
                        "namespace": NAMESPACE,
                    }
                ],
            },
        ]
        apply_documents(cluster, documents, field_manager=FIELD_MANAGER, namespace=NAMESPACE)
        self.start(cluster)

    def uninstall(self, cluster: ClusterTarget) -> None:
        """The process stopped (its log kept) and its identity deleted (the namespace stays,
        as the toolkit's own operator's does)."""
        self.stop(cluster)
        name = self.target
        with cluster.api_client() as api:
            delete_if_found(
                f"deleting ClusterRoleBinding {binding_name(name)}",
                client.RbacAuthorizationV1Api(api).delete_cluster_role_binding,
                binding_name(name),
            )
            delete_if_found(
                f"deleting ServiceAccount {NAMESPACE}/{service_account(name)}",
                client.CoreV1Api(api).delete_namespaced_service_account,
                service_account(name),
                NAMESPACE,
            )

    def start(self, cluster: ClusterTarget) -> ProcessSet:
        return self.controllers.start(cluster)

    def stop(self, cluster: ClusterTarget, *, kill: bool = False) -> list[str]:
        return self.controllers.stop(cluster, kill=kill)

    def forget(self, cluster: ClusterTarget) -> None:
        self.controllers.forget(cluster)

    def status(self, cluster: ClusterTarget) -> ProcessSet:
        return self.controllers.status(cluster)


def forget_all(cluster: ClusterTarget) -> None:
    """Every target's operator process of this cluster stopped and its state dropped (the
    cluster is going away: `compare cluster down`)."""
    root = cache_dir() / AREA
    for directory in sorted(root.glob(f"*/{cluster_key(cluster)}")) if root.is_dir() else []:
        processes = Controllers(area=f"{AREA}/{directory.parent.name}", names=(NAME,))
        processes.forget(cluster)  # its state directory too
