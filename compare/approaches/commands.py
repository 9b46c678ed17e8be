"""The CLI's side of an approach, an object of its own (`Commands`, an approach's `commands`):
the options of its `compare deploy NAME`, `compare undeploy NAME` and `compare run`, their
timeouts and help, and the hooks those commands call (`compare.cli.deploy_cmd`, `run_cmd`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from compare.approaches.contract import Arms, RunsControllers
from compare.cluster import ClusterTarget
from compare.deploy import DEPLOY_TIMEOUT_S
from compare.errors import CompareError
from compare.target import Target
from compare.webapp import WebApp

# A command's own options by name (`CommandOption.name`), as given.
Options = Mapping[str, Any]


@dataclass(frozen=True)
class CommandOption:
    """An option of an approach's `compare deploy NAME` or `compare undeploy NAME` beyond the
    ones every approach's takes (`--app`, `-n`, `--timeout`, `--target`, ...): the CLI makes a
    flag of it (`compare.cli.deploy_cmd`) and hands its value to the approach's command hooks
    under `name` (and to `configured`: an option named after a setting sets it)."""

    name: str
    flags: tuple[str, ...]
    # str, float, bool (a flag) or Path (a file); a str or Path option's default is None.
    kind: type
    default: Any = None
    help: str = ""
    # A float's range, refused as the command line is parsed.
    bounds: tuple[float, float] | None = None
    # Also taken with --target (else naming both is a usage error).
    with_target: bool = False
    # On an undeploy: when given, it names what to remove (the --app file is not read).
    names_app: bool = False


class Commands:
    """What is particular to an approach's commands: one command each for every approach
    (`compare.cli.deploy_cmd`), the built-in WebApp and a target file's arm alike deployed by
    `deploy_arm` and removed by `undeploy_arm` (`compare.cli.target_cmd`). An approach whose
    commands take more subclasses this (its `commands`); the hooks get the approach, with the
    command's settings (`configured`), as the small interface they use."""

    deploy_options: ClassVar[tuple[CommandOption, ...]] = ()
    undeploy_options: ClassVar[tuple[CommandOption, ...]] = ()
    # `compare run`'s options for this approach, each named after one of its settings
    # (`configured`); the flag names the approach (`--flux-interval`).
    run_options: ClassVar[tuple[CommandOption, ...]] = ()
    # `--timeout`'s default, seconds.
    deploy_timeout: ClassVar[float] = DEPLOY_TIMEOUT_S
    undeploy_timeout: ClassVar[float] = DEPLOY_TIMEOUT_S
    # The commands' help (its first sentence is their line in `compare deploy --help`); empty:
    # a generic one.
    deploy_help: ClassVar[str] = ""
    undeploy_help: ClassVar[str] = ""

    def check_options(self, options: Options) -> None:
        """The command's own options checked alone, before anything is read (one line naming
        the flag): options that contradict each other, a malformed value."""
        return None

    def command_target(
        self, approach: Arms, webapp: WebApp | None, source: Path | None, options: Options
    ) -> Target:
        """The built-in target a command deploys or removes: `webapp` (read from `source`),
        or, on an undeploy, the app an option names (`names_app`; `webapp` is None then),
        shaped by the options; what of them can be checked without a cluster is checked (one
        line naming the flag or file). By default: the built-in target of `webapp`."""
        from compare.approaches import builtin_target  # the registry imports this module

        if webapp is None:
            raise CompareError(f"{approach.name}: no option names an app to remove")
        return builtin_target(webapp, source)

    def command_install(
        self, approach: RunsControllers, cluster: ClusterTarget, target: Target, options: Options
    ) -> tuple[str, ...]:
        """What `compare deploy NAME` starts or installs before the arm (`deploy_arm`), and
        the lines that say so: by default `prepare`, said by nothing."""
        approach.prepare(cluster)
        return ()

    def after_undeploy(
        self, cluster: ClusterTarget, target: Target, ns: str, options: Options, *, builtin: bool
    ) -> tuple[str, ...]:
        """What `compare undeploy NAME` does once the arm is gone (`builtin`: the built-in
        WebApp's, else a target file's), as the options ask: stop what no app needs any more;
        the lines that say so."""
        return ()
