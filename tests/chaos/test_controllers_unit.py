"""The chaos layer stops and starts local controllers through the approaches' registry
(`Approach.controllers`), never by importing an approach: which approaches offer them, and the
one-line failure for one that runs none (before anything is touched)."""

from __future__ import annotations

import pytest
from chaoslib.exceptions import ActivityFailed

from compare import approaches
from compare.chaos import actions
from compare.deploy.processes import Controllers


def test_the_approaches_with_local_controllers_offer_them() -> None:
    offered = {a.name: a.controllers() for a in approaches.REGISTRY}
    assert offered["helm"] is None
    assert {name for name, found in offered.items() if found is not None} == {
        "operator",
        "flux",
        "argocd",
    }
    # Flux's and Argo CD's are the shared lifecycle itself, each under its own state area.
    shared = [c for c in offered.values() if isinstance(c, Controllers)]
    assert len({c.area for c in shared}) == len(shared) == 2


@pytest.mark.parametrize("action", [actions.stop_operator, actions.start_operator])
def test_an_approach_without_local_controllers_is_a_one_line_failure(action: object) -> None:
    assert callable(action)
    with pytest.raises(ActivityFailed) as failed:
        action(configuration={"webapp_approach": "helm"})
    assert str(failed.value) == "approach 'helm' runs no local controllers to stop or start"
    with pytest.raises(ActivityFailed, match="approach 'nope': unknown"):
        action(configuration={"webapp_approach": "nope"})


def test_the_chaos_layer_imports_no_approach_with_controllers() -> None:
    """Their deploy modules (the approaches' `controllers` modules) are reached
    through the registry only."""
    from tests.architecture.imports import imports

    prefixes = tuple(f"compare.deploy.{a.name}" for a in approaches.REGISTRY if a.controllers())
    named = sorted(
        f"{found.module} imports {found.target}"
        for found in imports()
        if found.module.startswith("compare.chaos") and found.target.startswith(prefixes)
    )
    assert named == []
