"""What every approach whose arm is a chart shares (helm, flux, argocd, and a test's): the
arm's rendering as its known desired state and its check without a cluster (`Charted`), and
the chart options of its commands, `--release` and `--values` (`ChartCommands`). Kept out of
the interface (`compare.approaches.contract`), which imports no deploy mechanism.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from compare.approaches.base import Approach, builtin_target
from compare.approaches.commands import CommandOption, Commands, Options
from compare.approaches.contract import Arms
from compare.deploy import chart_target, charts
from compare.errors import CompareError
from compare.inputfile import check_plain, load_yaml
from compare.target import ArmKind, Target
from compare.webapp import WebApp, load_webapp

# Chart values are a few KiB: a bigger file is a mistake (a wrong path).
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
    check_plain(data, str(path))  # Helm reads values as JSON: no bytes, no timestamps
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise CompareError(f"{path}: expected a mapping of chart values, got {type(data).__name__}")
    return data


class Charted(Approach):
    """An approach whose arm is a chart: what it applies is the chart's rendering, as the
    approach applies it (`applied`), known without a cluster and checked by `helm template`."""

    arm_kind: ClassVar[ArmKind] = "chart"

    def known_desired(self, target: Target, namespace: str) -> list[dict[str, Any]] | None:
        arm = self.chart_arm(target)
        rendered = chart_target.render_target(target, arm, namespace)
        return self.applied(rendered, arm.release, namespace)

    def check_target(self, target: Target, namespace: str) -> None:
        chart_target.render_target(target, self.chart_arm(target), namespace)


class ChartCommands(Commands):
    """The commands of a charted approach: the built-in WebApp released as `--release`
    (`RELEASE`) with the extra values of `--values` (`VALUES`), checked by `helm template` (a
    bad value is a line naming the values file); a release named on an undeploy is removed
    whatever the WebApp (examples/webapp.yaml stands in for it)."""

    deploy_options: ClassVar[tuple[CommandOption, ...]] = (RELEASE, VALUES)
    undeploy_options: ClassVar[tuple[CommandOption, ...]] = (RELEASE_TO_REMOVE,)

    def command_target(
        self, approach: Arms, webapp: WebApp | None, source: Path | None, options: Options
    ) -> Target:
        release, values = options.get("release"), options.get("values")
        if release is not None:
            charts.check_release_name(release)
        elif webapp is None:
            raise CompareError(f"{approach.name}: no option names an app to remove")
        extra = load_values(values)
        try:
            target = builtin_target(
                webapp or load_webapp(None), source, release=release, extra_values=extra
            )
            if values is not None:
                arm = approach.chart_arm(target)
                chart_target.render_target(target, arm, charts.DEFAULT_NAMESPACE)
        except CompareError as exc:
            if values is None or not exc.message.startswith("values: "):
                raise
            raise CompareError(f"{values}: {exc.message.removeprefix('values: ')}") from exc
        return target
