"""No activity can hang a run, and an injection that failed is never a verdict (issue 23 point
6, issue 24): on the embedded cluster, a process injection that never returns is killed at its
deadline (its own chaostoolkit `timeout`), a Python setup activity that hangs is abandoned at
its activity-level `timeout`, and a process injection that exits 1 is `error` - each trial
`error` naming the activity, the run ends on its own and the other trials are judged."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results
from tests.run.experiment_files import _experiment

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator_left_as_found")]


def _process(name: str, script: str, **provider: Any) -> dict[str, Any]:
    return {
        "type": "action",
        "name": name,
        "provider": {"type": "process", "path": "sh", "arguments": ["-c", script], **provider},
    }


def _write(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc))
    return path


def test_hanging_and_failing_injections_are_errors(cluster: ClusterTarget, tmp_path: Path) -> None:
    marker = tmp_path / "hang.pid"
    hang = _write(
        tmp_path / "hang.json",
        _experiment(
            "Hang",
            # `$$$$`: chaoslib substitutes the arguments (string.Template), `$$` is one `$`.
            _process("hang", f"echo $$$$ > {marker}; exec sleep 100000", timeout=3),
            {"name": "compare", "approaches": ["helm"], "injection": "hang"},
        ),
    )
    stuck = _experiment(
        "Stuck setup",
        {
            "type": "action",
            "name": "stuck",
            "timeout": 2,  # chaostoolkit's activity timeout: the deadline of a Python activity
            "provider": {
                "type": "python",
                "module": "tests.run.test_activity_deadline",
                "func": "block_forever",
            },
        },
        {"name": "compare", "approaches": ["helm"], "injection": "fault"},
    )
    stuck["method"].insert(1, _process("fault", "true"))
    stuck_file = _write(tmp_path / "stuck.json", stuck)
    fails = _write(
        tmp_path / "fails.json",
        _experiment(
            "Fails",
            _process("scale-nothing", "echo 'deployments.apps \"nope\" not found' >&2; exit 1"),
            {"name": "compare", "approaches": ["helm"], "injection": "scale-nothing"},
        ),
    )
    out = tmp_path / "reports"
    started = time.monotonic()
    result = CliRunner().invoke(
        app,
        [
            *("run", "--approach", "helm", "--kubeconfig", str(cluster.kubeconfig)),
            *("-e", str(hang), "-e", str(stuck_file), "-e", str(fails), "-e", "pod-delete-one"),
            *("--heal-window", "3", "--parallel", "4", "--output", str(out)),
        ],
    )
    took = time.monotonic() - started
    assert result.exit_code == 1, result.output  # trials ended in error: the run says so
    results = load_results(latest_run(out))
    assert results.complete

    (hung,) = results.trials_of("hang", "helm")
    assert hung.status == "error"
    assert hung.error is not None and hung.error.startswith(
        "the activity 'hang' did not finish within its deadline of 3 s (its process was killed"
    ), hung.error
    assert hung.journal is not None and (latest_run(out) / hung.journal).is_file()
    pid = int(marker.read_text())
    assert not Path(f"/proc/{pid}").exists() or " Z " in Path(f"/proc/{pid}/stat").read_text()

    (blocked,) = results.trials_of("stuck", "helm")
    assert blocked.status == "error"
    assert blocked.error is not None and "the activity 'stuck' did not finish within its" in (
        blocked.error
    )
    assert "abandoned" in blocked.error

    (failed,) = results.trials_of("fails", "helm")
    assert failed.status == "error"
    assert failed.error == (
        "the injection 'scale-nothing' exited with status 1: deployments.apps \"nope\" not found"
    )

    (pod,) = results.trials_of("pod-delete-one", "helm")
    assert pod.status == "healed"
    assert took < 240, took
