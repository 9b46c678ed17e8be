"""`compare run --target FILE` whose operator the toolkit runs itself (`install.process`): the
test fixture operator of tests/fixtures/operators/cache (kopf, `python -m kopf run ...`), its
CRD applied first, started under the supervisor with a kubeconfig of its own ServiceAccount,
and stopped at the run's end.

The faults on the operator's process apply to it: `operator-kill-drift` SIGKILLs it right
after scaling its StatefulSet to one replica and starts it again (the toolkit's start); the
operator, once back, puts the replicas back (it replaces its children whole on every event and
on its start). `operator-down-drift` stops it gracefully while the drift is made. A drift on
a child it owns (a ConfigMap's value) is corrected while it runs. Nothing is started by the
test: the toolkit starts and stops the process, whose log stays in its state directory.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import load_target
from compare.approaches.operator.target_process import (
    NAMESPACE,
    TargetProcess,
    binding_name,
    service_account,
)
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.kube.apierror import if_found
from compare.results import latest_run, load_results

from .cache_target import CRD, OPERATOR_DIR

runner = CliRunner()
TARGET = OPERATOR_DIR / "compare-process.yaml"
HEALED = ("operator-kill-drift", "operator-down-drift", "configmap-data-change")
# A restarted kopf process imports, logs in and lists its watches before it reconciles: over
# ten seconds on a loaded machine. The heal is timed from the drift, restart included.
HEAL_WINDOW_S = 40


def _crd_exists(api: client.ApiClient) -> bool:
    extensions = client.ApiextensionsV1Api(api)
    name = CRD["metadata"]["name"]
    return if_found("reading the CRD", extensions.read_custom_resource_definition, name) is not None


@pytest.mark.cluster
def test_the_toolkit_runs_the_operator_process_the_target_names_and_kills_it(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    arm = load_target(TARGET).operator_arm("operator")
    assert arm.install.process is not None
    process = TargetProcess("cache", arm.install.process)
    # Nothing runs it before the run: the toolkit starts it.
    assert not process.status(cluster).running
    crd_before = _crd_exists(api)
    log = process.status(cluster).state_dir / "operator.log"
    before = log.read_text(errors="replace") if log.exists() else ""

    out = tmp_path / "reports"
    chosen = [arg for name in HEALED for arg in ("-e", name)]
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(TARGET), *chosen, "--heal-window", str(HEAL_WINDOW_S)),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    text = log.read_text(errors="replace")[len(before) :] if log.exists() else "no log"
    assert result.exit_code == 0, (result.output, text[-3000:])
    results = load_results(latest_run(out))
    trials = {t.experiment: t for t in results.trials}
    # Every trial ran (none skipped as acting on an operator the toolkit does not run).
    assert set(trials) == set(HEALED), (results.skipped, result.output)
    for name in HEALED:
        trial = trials[name]
        assert trial.status == "healed", (name, trial.error, trial.evidence.mismatches_at_end)
        assert trial.evidence.fault_seen is not None, name
    kill = trials["operator-kill-drift"].evidence
    assert kill.target == "operator" and kill.field == "statefulset.spec.replicas"
    assert kill.before == kill.after == 2 and kill.during == 1

    # The toolkit started it (under the supervisor, with its ServiceAccount's kubeconfig),
    # started it again after the kill and the stop, and stopped it at the run's end.
    starts = [line for line in text.splitlines() if line.startswith("--- ") and "starting" in line]
    assert len(starts) >= 3, text[-3000:]
    assert all("compare.deploy.supervise -- " in line and " kopf run " in line for line in starts)
    assert "put back as desired" in text
    assert not process.status(cluster).running and process.status(cluster).processes == {}
    # Its identity is gone with it, and the CRD it applied (it was not there before).
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    account = service_account("cache")
    assert if_found("", core.read_namespaced_service_account, account, NAMESPACE) is None
    assert if_found("", rbac.read_cluster_role_binding, binding_name("cache")) is None
    assert _crd_exists(api) == crd_before


@pytest.mark.cluster
def test_an_operator_command_that_fails_at_its_start_is_one_line_and_nothing_is_left(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    # The supervisor restarts a command that fails at once: that restart is the start-up's
    # error, said with the command's own last words, and what the deploy made is removed.
    target = tmp_path / "broken.yaml"
    data = yaml.safe_load(TARGET.read_text())
    data["name"] = "broken"
    process = data["operator"]["install"]["process"]
    process.update(command=["python", "-m", "no_such_operator_module"], workingDir=str(tmp_path))
    process["crds"] = [str(OPERATOR_DIR / "crd.yaml")]
    data["operator"]["resources"] = [str(OPERATOR_DIR / "cache.yaml")]
    target.write_text(yaml.safe_dump(data))
    crd_before = _crd_exists(api)
    result = runner.invoke(
        app,
        [
            *("deploy", "operator", "--target", str(target), "-n", "broken-op"),
            *("--kubeconfig", str(cluster.kubeconfig)),
        ],
    )
    assert result.exit_code == 1, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert "the operator of broken (" in errors[0]
    assert "it exited with an error right after its start:" in errors[0]
    assert "No module named no_such_operator_module" in errors[0]
    arm = load_target(target).operator_arm("operator")
    assert arm.install.process is not None
    assert not TargetProcess("broken", arm.install.process).status(cluster).processes
    core = client.CoreV1Api(api)
    account = service_account("broken")
    assert if_found("", core.read_namespaced_service_account, account, NAMESPACE) is None
    assert _crd_exists(api) == crd_before
