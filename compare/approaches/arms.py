"""One way to deploy an approach's arm of a target, for every caller: `compare deploy NAME`
(the CLI), a run's preflight and its trials.

`deploy_arm` checks on the cluster what can be checked before anything is created
(`Approach.check_target_on`), installs what the arm needs first (`Approach.install_target`: an
operator) when asked, deploys the arm (`Approach.deploy_target`) and waits until its desired
state holds, all within one deadline. With `rollback`, a failure (an error, Ctrl-C) removes
what this deploy created - the arm when it was not there before, the install's new objects,
the namespace it created - and the one-line error says so (`compare.deploy.rollback`).

`preflight_arm` is a run's one deploy of an arm before its trials: into a scratch namespace,
removed again at once; what it installed stays for the trials (the caller removes it at the
run's end with the returned undo).
"""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections.abc import Callable
from dataclasses import dataclass

from kubernetes import client

from compare import kube
from compare.approaches.base import Approach
from compare.approaches.contract import TargetDeploy
from compare.cluster import ClusterTarget
from compare.deploy.rollback import Rollback
from compare.errors import CompareError
from compare.kube import Deadline
from compare.target import Target

# A run's preflight deploys each arm once in a namespace of its own, named so.
PREFLIGHT_PREFIX = "cmp-preflight"
# The namespace an operator's install puts unnamespaced objects in, when the target names none.
INSTALL_NAMESPACE = "webapp"


@dataclass(frozen=True)
class ArmDeployed:
    """A deployed arm: what its deploy reports, and how to remove what was installed first
    (None: nothing was)."""

    deployed: TargetDeploy
    undo_install: Callable[[], None] | None = None


def install_namespace(target: Target) -> str:
    """Where an arm's install (an operator's) puts what has no namespace of its own, when it
    is installed apart from a deploy (a run's preflight)."""
    return target.namespace or INSTALL_NAMESPACE


def _ignore(_: str) -> None:
    return None


def deploy_arm(
    approach: Approach,
    cluster: ClusterTarget,
    target: Target,
    namespace: str,
    *,
    timeout: float,
    install: bool = True,
    install_in: str | None = None,
    rollback: bool = True,
    check: bool = True,
    progress: Callable[[str], None] = _ignore,
    warn: Callable[[str], None] = _ignore,
    cancel: threading.Event | None = None,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> ArmDeployed:
    """Deploy the approach's arm of `target` into `namespace` (see the module's docstring).
    `install`: install what the arm needs first, into `install_in` (default: `namespace`);
    `rollback`: undo what this deploy created when it fails; `check`: check on the cluster
    first what can be checked before anything is created; `progress` gets what it is
    doing, `warn` what a rollback could not say in the error's line; `labels` and
    `annotations`: the namespace's when this deploy creates it."""
    deadline = Deadline(timeout)
    where = install_in or namespace
    if check:
        approach.check_target_on(cluster, target, where)
    installed: list[Callable[[], None]] = []

    def undo() -> None:
        for step in reversed(installed):
            step()

    def deploy() -> ArmDeployed:
        with cluster.api_client() as api:
            kube.ensure_namespace(api, namespace, labels=labels, annotations=annotations)
        if install:
            progress(f"deploying {target.name} with {approach.name}: installing")
            step = approach.install_target(cluster, target, where, timeout=deadline.remaining(1.0))
            if step is not None:
                installed.append(step)
        progress(f"deploying {target.name} with {approach.name}: waiting")
        deployed = approach.deploy_target(
            cluster, target, namespace, timeout=deadline.remaining(1.0), cancel=cancel
        )
        return ArmDeployed(deployed, undo if installed else None)

    if not rollback:
        try:
            return deploy()
        except BaseException as exc:
            # Without a rollback the arm stays for the caller to remove; what was installed
            # for it never does. The first error is the one told.
            if installed:
                with contextlib.suppress(CompareError):
                    undo()
                if isinstance(exc, CompareError):
                    exc.message = f"{exc.message}; removed what it installed"
            raise
    # A failed deploy removes only what it created: an arm that was there stays.
    existed = approach.target_row(cluster, target, namespace) is not None

    def remove() -> None:
        approach.undeploy_target(cluster, target, namespace, timeout=timeout)
        undo()

    with Rollback(cluster, namespace, existed=existed, remove=remove, warn=warn):
        return deploy()


def preflight_arm(
    approach: Approach,
    cluster: ClusterTarget,
    target: Target,
    *,
    timeout: float,
    warn: Callable[[str], None] = _ignore,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
) -> ArmDeployed:
    """A run's one deploy of the arm before its trials, in a scratch namespace removed again
    at once: an arm whose desired state cannot be reached stops the run here, with the
    judge's diagnosis, instead of one `error` per trial after a full deploy timeout each.
    What it installed stays (the returned undo removes it; on failure it is removed here).
    `warn` gets what the deploy found worth a warning but not a stop, once; the scratch
    namespace carries `labels` and `annotations` (the run's owner: a killed run's is found)."""
    # What can be checked before anything is created is said as it is, not as a failed deploy.
    approach.check_target_on(cluster, target, install_namespace(target))
    scratch = f"{PREFLIGHT_PREFIX}-{approach.short}-{secrets.token_hex(3)}"
    trial = target.for_trial(scratch)
    try:
        try:
            done = deploy_arm(
                approach, cluster, trial, scratch, timeout=timeout,
                install_in=install_namespace(target), rollback=False, check=False,
                labels=labels, annotations=annotations,
            )  # fmt: skip
        finally:
            with contextlib.suppress(CompareError, client.ApiException):
                approach.undeploy_target(cluster, trial, scratch, timeout=timeout)
            with (
                contextlib.suppress(CompareError, client.ApiException),
                cluster.api_client() as api,
            ):
                kube.delete_namespace(api, scratch)
    except CompareError as exc:
        raise CompareError(
            f"preflight of the {approach.name} arm: {exc.message} (one deploy, before any"
            " trial: no trial can hold this state)",
            exit_code=exc.exit_code,
        ) from None
    for line in done.deployed.warnings:
        warn(line)
    return done
