"""Which approaches each experiment applies to: derived at discovery from what the approaches
declare (`Approach.fault_targets`), never listed in the built-in files; and the default run's
plan, the same cells as when the files listed them. In a run, per approach: a fault applies
to an approach whose own arm deploys the object it acts on (that arm's desired state, never
another arm's), and every cell without trials carries its reason (`skipped_for`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

import pytest
import yaml

from compare import approaches
from compare.approaches import builtin_target, load_target
from compare.approaches.helm import Helm
from compare.paths import EXPERIMENTS_DIR
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


# --- per approach, from each arm's own desired state -------------------------------------

CHARTS = Path(__file__).parents[1] / "fixtures" / "charts"
# The faults on the parts stateful-app renders and plain-app (a Deployment and a Service) not.
ON_STATEFUL_PARTS = NOT_IN_THE_WEBAPP


def _two_charts(folder: Path) -> Path:
    """A target whose helm and argocd arms deploy stateful-app (a StatefulSet, ConfigMap,
    Secret, RoleBinding) and whose flux arm deploys plain-app (none of these)."""
    stateful = {"chart": {"path": str(CHARTS / "stateful-app")}, "release": "sapp"}
    plain = {"chart": {"path": str(CHARTS / "plain-app")}, "release": "sapp"}
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "two",
        "helm": stateful,
        "flux": plain,
        "argocd": stateful,
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_fault_applies_to_each_approach_whose_own_arm_deploys_its_object(
    tmp_path: Path,
) -> None:
    names = ("helm", "flux", "argocd")
    request = RunRequest(
        approaches=names,
        experiments=tuple(load_experiments([*ON_STATEFUL_PARTS, "deployment-paused"])),
        app=App(load_target(_two_charts(tmp_path))),
        output_dir=tmp_path,
    )
    kept, skipped = runnable(request, embedded=True)
    # Only the flux arm has a Deployment: the Deployment fault runs for it alone.
    assert skipped == {}
    by_name = {s.name: s for s in kept.experiments}
    paused = by_name["deployment-paused"]
    assert [p.approach for p in plan_trials(replace(kept, experiments=(paused,)))] == ["flux"]
    assert paused.skipped_for == dict.fromkeys(
        ("helm", "argocd"),
        "applies to a Deployment only (the app's is StatefulSet sapp-stateful-app)",
    )
    # The faults on the StatefulSet, ConfigMap, Secret and binding: helm and argocd, each
    # with flux's reason read from flux's own arm (never a bare n/a).
    for name in ON_STATEFUL_PARTS:
        spec = by_name[name]
        cells = [p.approach for p in plan_trials(replace(kept, experiments=(spec,)))]
        assert cells == ["helm", "argocd"], name
        assert list(spec.skipped_for) == ["flux"], name
        assert spec.skipped_for["flux"].endswith("(the app's manifest has none)") or (
            spec.skipped_for["flux"].startswith("applies to a StatefulSet only")
        ), name
        info = spec.info()
        assert "flux" not in info.approaches and info.skipped_for == spec.skipped_for
    assert by_name["configmap-delete"].skipped_for == {
        "flux": "needs a ConfigMap (the app's manifest has none)"
    }


def test_a_fault_no_arm_deploys_the_object_of_is_left_out_with_the_reason(
    tmp_path: Path,
) -> None:
    request = RunRequest(
        approaches=("flux",),
        experiments=tuple(load_experiments(["pod-delete-one", "secret-delete"])),
        app=App(load_target(_two_charts(tmp_path))),
        output_dir=tmp_path,
    )
    kept, skipped = runnable(request, embedded=True)
    assert [s.name for s in kept.experiments] == ["pod-delete-one"]
    assert skipped == {"secret-delete": "needs a Secret (the app's manifest has none)"}


def test_every_cell_of_the_default_run_without_trials_says_why() -> None:
    names = approaches.default_names()
    request = RunRequest(
        approaches=names,
        experiments=tuple(load_experiments()),
        app=App(builtin_target(load_webapp(), Path("app.yaml"))),
        output_dir=Path("out"),
    )
    kept, _ = runnable(request, embedded=True)
    planned = {(p.experiment.name, p.approach) for p in plan_trials(kept)}
    reasons = {
        (s.name, a): s.skipped_for[a]
        for s in kept.experiments
        for a in names
        if (s.name, a) not in planned
    }
    assert set(reasons) == {(n, a) for n in OPERATOR_PROCESS for a in names if a != "operator"}
    assert set(reasons.values()) == {
        "acts on a part of the operator approach itself: "
        + approaches.get("operator").fault_targets["operator"]
    }
    # A planned cell has no reason.
    assert all(a not in s.skipped_for for s in kept.experiments for a in s.approaches)


def test_a_files_own_approach_lists_are_the_reason(tmp_path: Path) -> None:
    data = json.loads((EXPERIMENTS_DIR / "image-change.json").read_text())
    only, others = tmp_path / "only.json", tmp_path / "others.json"
    data["extensions"][0]["approaches"] = ["operator"]
    only.write_text(json.dumps(data))
    del data["extensions"][0]["approaches"]
    data["extensions"][0]["except-approaches"] = ["helm"]
    others.write_text(json.dumps(data))
    request = RunRequest(
        approaches=("helm", "operator"),
        experiments=tuple(load_experiments([str(only), str(others)])),
        app=App(builtin_target(load_webapp(), Path("app.yaml"))),
        output_dir=tmp_path,
    )
    kept, _ = runnable(request, embedded=True)
    assert [s.skipped_for for s in kept.experiments] == [
        {"helm": "its file names only operator (approaches)"},
        {"helm": "its file leaves helm out (except-approaches)"},
    ]
