"""What validation leaves alone is resolved when a trial starts: a control of the user's is
imported (its module runs) by chaoslib in the trial, and a Python module that does not exist
makes that trial `error` naming it, while the run goes on."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results
from tests.run.experiment_files import TARGET, _action, _experiment

pytestmark = pytest.mark.cluster

CONTROL = "compare_test_user_control"


def test_controls_and_modules_are_resolved_when_the_trial_starts(
    cluster: ClusterTarget, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "control-ran"
    code = tmp_path / "code"
    code.mkdir()
    (code / f"{CONTROL}.py").write_text(
        "from pathlib import Path\n\n"
        "def before_activity_control(context, **kwargs):\n"
        f"    Path({str(marker)!r}).write_text(context['name'])\n"
    )
    monkeypatch.syspath_prepend(str(code))
    monkeypatch.delitem(sys.modules, CONTROL, raising=False)
    scale = _action("scale-to-two", "chaosk8s.deployment.actions", "scale_deployment", **TARGET)
    scale["provider"]["arguments"]["replicas"] = 2
    controlled = _experiment(
        "Scale to two, controlled",
        scale,
        {"name": "compare", "approaches": ["helm"], "evidence": {"target": "deployment"}},
    )
    controlled["controls"] = [{"name": "mine", "provider": {"type": "python", "module": CONTROL}}]
    missing = _experiment(
        "A module nobody wrote",
        _action("nothing", "no_such_user_module", "act", **TARGET),
        {"name": "compare", "approaches": ["helm"]},
    )
    files = []
    for name, doc in (("controlled", controlled), ("missing-module", missing)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(doc))
        files += ["-e", str(path)]
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        app,
        [
            *("run", "--approach", "helm", "--kubeconfig", str(cluster.kubeconfig), *files),
            *("--heal-window", "2", "--parallel", "2", "--output", str(out)),
        ],
    )
    assert result.exit_code == 1, result.output  # the missing module's trial is an error
    results = load_results(latest_run(out))
    (controlled_trial,) = results.trials_of("controlled", "helm")
    assert controlled_trial.status == "not-healed", controlled_trial.error
    assert marker.read_text()  # the control ran, in the trial: an activity's name
    (failed,) = results.trials_of("missing-module", "helm")
    assert failed.status == "error"
    assert failed.error == (
        "the injection 'nothing' could not run: no Python module 'no_such_user_module'"
        " (a module of your own must be importable when the trial runs: PYTHONPATH)"
    )
