"""A user's own experiment files run and are reported like the built-ins; a failing one is an
error trial and the others go on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import SCHEMA_VERSION, latest_run, load_results
from tests.run.experiment_files import TARGET, _action, _experiment

pytestmark = pytest.mark.cluster


def test_user_experiments_run_and_are_reported(cluster: ClusterTarget, tmp_path: Path) -> None:
    scale = tmp_path / "scale-to-two.json"
    scale.write_text(
        json.dumps(
            _experiment(
                "Scale to two",
                _action(
                    "scale-to-two",
                    "chaosk8s.deployment.actions",
                    "scale_deployment",
                    replicas=2,
                    **TARGET,
                ),
                {
                    "name": "compare",
                    "fault": "Deployment scaled to 2",
                    "approaches": ["helm"],
                    "evidence": {"target": "deployment", "field": "deployment.spec.replicas"},
                },
            )
        )
    )
    bare = tmp_path / "extra-env.yaml"  # YAML, and no `compare` block: the defaults apply
    bare.write_text(
        yaml.safe_dump(
            _experiment(
                "Extra env",
                _action("add-env", "compare.chaos.actions", "add_env_var", **TARGET),
                None,
            )
        )
    )
    broken = tmp_path / "no-such-port.json"
    broken.write_text(
        json.dumps(
            _experiment(
                "Change a port that is not there",
                _action(
                    "change-port",
                    "compare.chaos.actions",
                    "set_service_port",
                    port_name="nope",
                    **TARGET,
                ),
                {"name": "compare", "approaches": ["helm"]},
            )
        )
    )
    # chaosk8s lets the API's 404 through; chaoslib wraps it, the error keeps the API's message.
    aborts = tmp_path / "delete-missing-service.json"
    aborts.write_text(
        json.dumps(
            _experiment(
                "Delete a Service that is not there",
                _action(
                    "delete-missing",
                    "chaosk8s.service.actions",
                    "delete_service",
                    name="nope",
                    ns="${webapp_namespace}",
                ),
                {"name": "compare", "approaches": ["helm"]},
            )
        )
    )
    out = tmp_path / "reports"
    result = CliRunner().invoke(
        app,
        [
            *("run", "--approach", "helm", "--kubeconfig", str(cluster.kubeconfig)),
            *("-e", str(scale), "-e", str(bare), "-e", str(broken), "-e", str(aborts)),
            *("-e", "pod-delete-one"),
            *("--heal-window", "2", "--parallel", "4", "--output", str(out)),
        ],
    )
    # A trial ended in error: the run says so with its exit code, after recording everything.
    assert result.exit_code == 1, result.output
    results = load_results(latest_run(out))
    assert results.complete
    # Written as the current schema: helm has no settings of its own to record.
    written = json.loads((latest_run(out) / "results.json").read_text())
    assert written["schemaVersion"] == SCHEMA_VERSION
    assert written["settings"]["approachSettings"] == {}
    info = {e.name: e for e in results.experiments}
    assert not info["scale-to-two"].builtin and info["scale-to-two"].path == str(scale)
    assert info["scale-to-two"].fault == "Deployment scaled to 2"
    assert info["extra-env"].fault == "Extra env"  # the title, without a compare block
    assert info["pod-delete-one"].builtin

    (scaled,) = results.trials_of("scale-to-two", "helm")
    assert scaled.status == "not-healed"
    assert (scaled.evidence.before, scaled.evidence.during, scaled.evidence.after) == (3, 2, 2)
    assert scaled.evidence.mismatches_at_end[0] == "deployment.spec.replicas: want 3, got 2"

    (extra,) = results.trials_of("extra-env", "helm")
    assert extra.status == "not-healed"
    assert extra.evidence.target is None
    assert (extra.evidence.model_extra or {})["injection"] == "add-env"
    assert any(".containers[webapp].env" in m for m in extra.evidence.mismatches_at_end)

    (failed,) = results.trials_of("no-such-port", "helm")
    assert failed.status == "error"
    assert failed.error == (
        "the injection 'change-port' failed: ActivityFailed: service"
        f" {failed.namespace}/webapp-demo has no port named 'nope'"
    )
    assert failed.journal is not None and (latest_run(out) / failed.journal).is_file()

    (aborted,) = results.trials_of("delete-missing-service", "helm")
    assert aborted.status == "error"
    assert aborted.error == (
        "the injection 'delete-missing' failed: NotFoundException: (404):"
        ' services "nope" not found'
    )
    assert "=> failed:" in (latest_run(out) / "chaostoolkit.log").read_text()

    (pod,) = results.trials_of("pod-delete-one", "helm")
    assert pod.status == "healed"
    assert "helm/no-such-port: 1/1 trials ended in error" in result.output
