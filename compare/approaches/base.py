"""The approach (`Approach`), a way of keeping an app in its desired state: the composition of
the small interfaces of `compare.approaches.contract`, with its identity and the CLI's object of
its commands. The rest of the toolkit knows approaches through these and the registry alone;
like the interfaces, this module imports no approach's package and no deploy mechanism.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from compare.approaches.commands import Commands
from compare.approaches.contract import (
    Arms,
    Deploys,
    Fault,
    Observes,
    Rendering,
    RunsControllers,
    Settings,
)
from compare.target import Target
from compare.target import builtin_target as target_with
from compare.webapp import WebApp


def builtin_target(
    webapp: WebApp,
    source: Path | None = None,
    *,
    release: str | None = None,
    extra_values: Mapping[str, Any] | None = None,
) -> Target:
    """The built-in WebApp as a target with an arm for every registered approach
    (`compare.target.builtin_target` with the registry's keys)."""
    # The registry imports every approach, and so this module: read when called.
    from compare.approaches import target_arms

    arms = target_arms()
    return target_with(webapp, source, arms=arms, release=release, extra_values=extra_values)


@dataclass(frozen=True)
class Approach(Arms, Rendering, Deploys, RunsControllers, Observes, Settings):
    """One approach. Instances are immutable; per-approach settings are fields of the
    subclass (Flux's interval) and `configured` returns a copy with some of them changed.

    Subclasses set `name` (a DNS label: namespaces, results.json, `compare deploy NAME`, its
    key in a target file), `short` (its part of a trial namespace's name), `label` (`compare
    status`'s line when none is deployed), `arm_kind` and `arm_description` (its key in a
    target file: `arm_key`), and implement the abstract methods; the others have defaults that
    fit an approach with nothing shared to start and no Events to read (a charted one starts
    from `compare.approaches.charted.Charted`). Every app, the built-in WebApp included, is a
    target (`builtin_target`, with an arm for every approach): an approach deploys, desires
    and removes it through its target methods alone.
    """

    name: ClassVar[str]
    short: ClassVar[str]
    label: ClassVar[str]
    # Whether a run without `--approach` includes it (an approach whose controllers are heavy
    # may be one a user asks for by name).
    default: ClassVar[bool] = True
    # Evidence targets of faults on a part of this approach itself rather than of the app
    # (the operator's process), each with what it is (a run that cannot act on it says
    # "acts on <what>"): an experiment tracking one applies only to the approaches that
    # declare it (`compare.run.experiments`); the other targets are the app's objects and
    # pods, which every approach deploys.
    fault_targets: ClassVar[Mapping[str, str]] = {}
    # The options, help and hooks of its commands (`compare deploy/undeploy NAME`, `compare
    # run`'s own options): the CLI's object, typed against alone.
    commands: ClassVar[Commands] = Commands()

    def applies_to(self, fault: Fault) -> bool:
        """Whether `fault` (an experiment) has trials of this approach. By default: the
        experiment names it, or names no approach (`compare.run.experiments` resolves that to
        the registry); whether the app has the parts it acts on is the run's to decide."""
        return self.name in fault.approaches
