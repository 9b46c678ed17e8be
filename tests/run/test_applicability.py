"""Which approaches each experiment applies to: derived at discovery from what the approaches
declare (`Approach.fault_targets`), never listed in the built-in files; and the default run's
plan, the same cells as when the files listed them."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import ClassVar

import pytest

from compare import approaches
from compare.approaches import builtin_target
from compare.approaches.helm import Helm
from compare.run.app import App
from compare.run.engine import RunRequest, plan_trials, runnable
from compare.run.experiments import configuration_defaults, load_experiments, load_spec
from compare.webapp import load_webapp

# The faults that stop or kill the operator's process: the only ones restricted.
OPERATOR_PROCESS = ("operator-down-drift", "operator-kill-drift")
# The faults on parts the built-in WebApp has not: left out of its run, whatever approach.
NOT_IN_THE_WEBAPP = (
    "statefulset-pod-delete",
    "configmap-data-change",
    "configmap-delete",
    "secret-data-change",
    "secret-delete",
    "rbac-binding-delete",
)


def _target(spec_name: str) -> str | None:
    spec = load_spec(spec_name)
    return spec.evidence_for(configuration_defaults(spec.document.get("configuration")))[0]


def test_a_fault_on_an_approachs_own_part_applies_to_the_approaches_that_declare_it() -> None:
    declared = approaches.fault_targets()
    for spec in load_experiments():
        target = _target(spec.name)
        if target in declared:
            assert spec.approaches == approaches.declaring(target), spec.name
        else:
            assert spec.approaches == approaches.names(), spec.name


def test_only_the_faults_on_the_operators_process_are_restricted() -> None:
    restricted = {
        s.name: s.approaches for s in load_experiments() if s.approaches != approaches.names()
    }
    assert restricted == dict.fromkeys(OPERATOR_PROCESS, ("operator",))
    for name in OPERATOR_PROCESS:
        # They act on the process: they stop it and start it again.
        actions = [a["provider"]["func"] for a in load_spec(name).document["method"]]
        assert "stop_operator" in actions and "start_operator" in actions
        assert _target(name) in approaches.get("operator").fault_targets


def test_the_default_run_plans_the_same_104_cells() -> None:
    names = approaches.default_names()
    assert names == ("helm", "operator", "flux")
    request = RunRequest(
        approaches=names,
        experiments=tuple(load_experiments()),
        app=App(builtin_target(load_webapp(), Path("app.yaml"))),
        output_dir=Path("out"),
    )
    kept, skipped = runnable(request, embedded=True)
    assert sorted(skipped) == sorted(NOT_IN_THE_WEBAPP)
    cells = [(p.experiment.name, p.approach) for p in plan_trials(kept)]
    # As before the files lost their lists: every kept fault for the three approaches, the
    # operator-process faults for the operator only (34 x 3 + 2).
    assert cells == [
        (s.name, a)
        for s in kept.experiments
        for a in names
        if s.name not in OPERATOR_PROCESS or a == "operator"
    ]
    assert len(cells) == 104


class _Kept(Helm):
    """An approach added in a test: it declares the operator's process target as its own too
    (a controller process a fault may stop)."""

    name = "kept"
    short = "kept"
    fault_targets: ClassVar[Mapping[str, str]] = {"operator": "its own process"}


class _Plain(Helm):
    """An approach added in a test that declares nothing of its own."""

    name = "plain"
    short = "plain"


def test_an_approach_added_later_gets_its_cells_from_what_it_declares(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(approaches, "REGISTRY", (*approaches.REGISTRY, _Kept(), _Plain()))
    stop = load_spec("operator-down-drift")
    assert stop.approaches == ("operator", "kept")
    assert load_spec("image-change").approaches == (*approaches.names(),)
    assert "plain" in load_spec("configmap-delete").approaches
