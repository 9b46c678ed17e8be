"""Plain Helm: `helm upgrade --install` of the chart, once; nothing watches the release after.

Nothing is shared between releases (no controller to start), Helm posts no Events (detection
is not observable), and a trial's release lives in its namespace: deleting the namespace
removes it, so `cleanup` has nothing to do before a trial's namespace goes. The built-in
WebApp is deployed as the target it is (`Approach.builtin`), through the target methods here.

`compare deploy helm` takes `--release` and `--values` for the built-in WebApp (the release
name and extra chart values of its target, `chart_target`); Flux's command takes them too.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from kubernetes import client

from compare.approaches.base import Approach, CommandOption, TargetDeploy, webapp_notes
from compare.cluster import ClusterTarget
from compare.deploy.helm import (
    DEFAULT_NAMESPACE,
    DEFAULT_TIMEOUT_S,
    check_release_name,
    get_release,
)
from compare.deploy.helm_arm import (
    deploy_target,
    helm_arm,
    release_desired,
    render_target,
    uninstall_target,
)
from compare.deploy.ownership import helm_applied
from compare.deploy.rows import DeployedApp
from compare.deploy.status import helm_apps, target_app
from compare.errors import CompareError
from compare.inputfile import load_yaml
from compare.judge import DesiredObjects
from compare.target import HelmInstall, Target, builtin_target
from compare.webapp import WebApp, load_webapp

# Chart values are a few KiB; a bigger file is a mistake (a wrong path), not values.
MAX_VALUES_BYTES = 1024 * 1024

RELEASE = CommandOption(
    "release", ("--release",), str, help="Helm release name (default: the WebApp's metadata.name)."
)
VALUES = CommandOption(
    "values",
    ("--values", "-f"),
    Path,
    help="Extra chart values (YAML): probes, security contexts, ... not the WebApp's own.",
)
# On an undeploy, a release named removes it whatever --app says.
RELEASE_TO_REMOVE = CommandOption(
    "release",
    ("--release",),
    str,
    help="Helm release name (default: metadata.name of --app).",
    names_app=True,
)


def load_values(path: Path | None) -> dict[str, Any] | None:
    """A `--values` file: a mapping of chart values (None: no file)."""
    if path is None:
        return None
    data = load_yaml(path, limit=MAX_VALUES_BYTES)
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CompareError(f"{path}: expected a mapping of chart values, got {type(data).__name__}")
    return data


def chart_target(
    approach: Approach, webapp: WebApp | None, source: Path | None, options: Mapping[str, Any]
) -> Target:
    """The built-in target of a charted approach's command, released as `--release` with the
    extra values of `--values`, checked without a cluster (`helm template`: the chart's schema
    and templates accept them; a bad value is a line naming the values file). On an undeploy
    that names its release, the WebApp is only the release's shell (examples/webapp.yaml)."""
    release, values = options.get("release"), options.get("values")
    if release is not None:
        check_release_name(release)
    extra = load_values(values)
    try:
        target = builtin_target(
            webapp or load_webapp(None), source, release=release, extra_values=extra
        )
        if values is not None:
            render_target(target, approach.chart_arm(target), DEFAULT_NAMESPACE)
    except CompareError as exc:
        if values is None or not exc.message.startswith("values: "):
            raise
        raise CompareError(f"{values}: {exc.message.removeprefix('values: ')}") from exc
    return target


@dataclass(frozen=True)
class Helm(Approach):
    name = "helm"
    short = "helm"
    label = "helm releases"
    charted = True
    deploy_options: ClassVar[tuple[CommandOption, ...]] = (RELEASE, VALUES)
    undeploy_options: ClassVar[tuple[CommandOption, ...]] = (RELEASE_TO_REMOVE,)
    deploy_timeout: ClassVar[float] = DEFAULT_TIMEOUT_S
    undeploy_timeout: ClassVar[float] = DEFAULT_TIMEOUT_S
    deploy_help: ClassVar[str] = (
        "Install or upgrade the WebApp (or a --target file's chart) as a Helm release and wait"
        " until its desired state holds."
    )
    undeploy_help: ClassVar[str] = (
        "Uninstall the Helm release (or a --target file's) and wait until its objects and pods"
        " are gone."
    )

    def chart_arm(self, target: Target) -> HelmInstall:
        return helm_arm(target)

    def applied(
        self, rendered: list[dict[str, Any]], release: str, namespace: str
    ) -> list[dict[str, Any]]:
        # Helm's own ownership metadata: exactly what `helm upgrade --install` applies.
        return helm_applied(rendered, release=release, namespace=namespace)

    def status(
        self, cluster: ClusterTarget, api: client.ApiClient, namespace: str | None
    ) -> list[DeployedApp]:
        return helm_apps(cluster, api, namespace)

    def cleanup(self, cluster: ClusterTarget, webapp: WebApp, namespace: str) -> None:
        return None  # the release and its record go with the namespace

    def deploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float,
        cancel: threading.Event | None = None,
    ) -> TargetDeploy:
        # The release's own manifest is the desired state; the faults act on its parts.
        install = helm_arm(target)
        deployed, desired = deploy_target(
            cluster, target, install, namespace, timeout=timeout, cancel=cancel
        )
        kinds = sorted({item.kind for item in desired.items})
        return TargetDeploy(
            desired,
            headline=f"helm release {deployed.release} revision {deployed.revision} (chart"
            f" {install.chart.describe()}, version {deployed.chart_version}) in namespace"
            f" {deployed.namespace}: desired state holds",
            notes=(*webapp_notes(target), f"{len(desired.items)} objects: {', '.join(kinds)}"),
        )

    def undeploy_target(
        self,
        cluster: ClusterTarget,
        target: Target,
        namespace: str,
        *,
        timeout: float | None = None,
    ) -> bool:
        install = helm_arm(target)
        if get_release(cluster, namespace, install.release) is None:
            return False
        uninstall_target(cluster, install, namespace, timeout=timeout or DEFAULT_TIMEOUT_S)
        return True

    def target_desired(
        self, cluster: ClusterTarget, api: client.ApiClient, target: Target, namespace: str
    ) -> DesiredObjects:
        # The release the trial installed in `namespace`.
        install = helm_arm(target)
        return release_desired(cluster, api, target, install, namespace)

    def target_what(self, target: Target) -> str:
        return f"helm release {helm_arm(target).release}"

    def target_row(
        self, cluster: ClusterTarget, target: Target, namespace: str
    ) -> DeployedApp | None:
        return target_app(cluster, target, helm_arm(target), namespace)

    def command_target(
        self, webapp: WebApp | None, source: Path | None, options: Mapping[str, Any]
    ) -> Target:
        return chart_target(self, webapp, source, options)
