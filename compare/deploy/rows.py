"""One row of `compare status`: a deployed app and whether its desired state holds, judged
closed-world. Every approach's `target_row` builds its row here (`judged_row`, or `unjudged`
when there is nothing to judge by)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

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


def _first_image(obj: Mapping[str, Any], kind_name: str) -> str | None:
    template = pod_template(obj, kind_name) or {}
    containers = (template.get("spec") or {}).get("containers") or [{}]
    image = containers[0].get("image")
    return None if image is None else str(image)


def live_summary(
    desired: DesiredObjects, live: Mapping[str, Any] | None
) -> tuple[int | None, str | None]:
    """The live workload's replicas and first image, as the cluster has them now: a drifted
    image or replica count is shown as it is, never the desired one (a workload that is gone:
    neither). A kind without a replica count (a DaemonSet) shows the desired number."""
    if desired.workload is None or live is None:
        return None, None
    replicas = (live.get("spec") or {}).get("replicas", desired.replicas)
    return replicas, _first_image(live, desired.workload.kind)


def judged_row(
    api: client.ApiClient,
    *,
    approach: str,
    name: str,
    namespace: str,
    detail: str,
    desired: DesiredObjects,
) -> DeployedApp:
    """The row of an app whose desired state is `desired` (defaulted), judged closed-world;
    its replicas and image the live workload's."""
    reading = read(api, namespace, desired.kinds)
    live, replicaset, pods = workload(desired, reading)
    found = problems(desired, reading)
    ready = current_ready(live, replicaset, pods, reading.all("ControllerRevision"))
    state = "holds" if not found else f"drifted: {found[0]}"
    replicas, image = live_summary(desired, live)
    return DeployedApp(approach, name, namespace, detail, replicas, len(ready), image, state)


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
