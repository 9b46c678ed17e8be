"""One row of `compare status`: a deployed app and whether its desired state holds, judged
closed-world. Every approach's `target_row` builds its row here (`judged_row`, or `unjudged`
when there is nothing to judge by)."""

from __future__ import annotations

from dataclasses import dataclass

from kubernetes import client

from compare.judge import (
    DesiredObjects,
    problems,
    read,
    workload,
)
from compare.judge.kinds import pod_template
from compare.judge.verdict import current_ready


@dataclass(frozen=True)
class DeployedApp:
    """One deployed WebApp, as one approach manages it."""

    approach: str  # the approach's name
    name: str  # the release, the HelmRelease, the Application or the custom resource
    namespace: str
    detail: str  # the approach's own view: a release's revision, a CR's phase, ...
    desired_replicas: int | None
    ready_replicas: int | None
    image: str | None
    state: str  # "holds", or what differs


def summary(desired: DesiredObjects) -> tuple[int | None, str | None]:
    """Desired replicas and the first container's image, for the table (of the workload: the
    first Deployment, else StatefulSet, else DaemonSet)."""
    if desired.workload is None:
        return None, None
    template = pod_template(desired.workload.defaulted, desired.workload.kind) or {}
    containers = (template.get("spec") or {}).get("containers") or [{}]
    return desired.replicas, containers[0].get("image")


def judged_state(api: client.ApiClient, namespace: str, desired: DesiredObjects) -> tuple[int, str]:
    """Ready pods of the current template, and "holds" or the first thing that differs."""
    reading = read(api, namespace, desired.kinds)
    live, replicaset, pods = workload(desired, reading)
    found = problems(desired, reading)
    ready = current_ready(live, replicaset, pods, reading.all("ControllerRevision"))
    return len(ready), "holds" if not found else f"drifted: {found[0]}"


def judged_row(
    api: client.ApiClient,
    *,
    approach: str,
    name: str,
    namespace: str,
    detail: str,
    desired: DesiredObjects,
) -> DeployedApp:
    """The row of an app whose desired state is `desired` (defaulted), judged closed-world."""
    replicas, image = summary(desired)
    ready, state = judged_state(api, namespace, desired)
    return DeployedApp(approach, name, namespace, detail, replicas, ready, image, state)


def unjudged(
    approach: str,
    name: str,
    namespace: str,
    detail: str,
    state: str,
    *,
    replicas: int | None = None,
    image: str | None = None,
) -> DeployedApp:
    """The row of an app with nothing to judge it by: `state` says why."""
    return DeployedApp(approach, name, namespace, detail, replicas, None, image, state)
