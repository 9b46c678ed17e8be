"""The fault cluster: a run's cluster-wide faults on a sibling embedded cluster, gone after it.

Real clusters (the test session's and the sibling the run makes), real helm, the real operator
process, real chaostoolkit. The API server restart is done on the sibling (the run's own
API server keeps its pid), its trials say where they ran, the ordinary trials ran on the
run's cluster, and nothing of the sibling is left: no cluster directory, no process, no state
of the operator started for it - after a normal end and after a Ctrl-C or SIGTERM in the middle. A
sibling that cannot be made is one line, and the run goes on as without it.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from compare.approaches import Approach, builtin_target
from compare.approaches.operator.process import OPERATOR
from compare.cli import app
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.cluster.embedded import _alive
from compare.errors import CompareError
from compare.paths import cache_dir
from compare.results import TrialResult, latest_run, load_results
from compare.run.app import App
from compare.run.engine import Run, RunRequest
from compare.run.experiments import load_experiments
from compare.run.trial import TrialPlan
from compare.webapp import DEFAULT_APP, load_webapp

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator_left_as_found")]

COMPARE = str(Path(sys.executable).with_name("compare"))


def _siblings(cluster: ClusterTarget) -> list[str]:
    """The embedded clusters named after the test cluster (a run's fault clusters)."""
    prefix = f"{cluster_key(cluster)}-"
    clusters = cache_dir() / "kwok" / "clusters"
    return sorted(p.name for p in clusters.iterdir() if p.name.startswith(prefix))


def _gone(name: str) -> None:
    sibling = EmbeddedCluster(name)
    assert not sibling.status().exists, name
    target = ClusterTarget(sibling.kubeconfig, None, embedded=True)
    assert not OPERATOR.state_dir(target).exists(), "the operator started for it left its state"


def test_the_cluster_wide_trials_run_on_a_sibling_that_is_gone_after_the_run(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    main = EmbeddedCluster(cluster_key(cluster))
    apiserver = main.component_pid("kube-apiserver")
    assert apiserver is not None and not _siblings(cluster)
    result = CliRunner().invoke(
        app,
        [
            *("run", "--kubeconfig", str(cluster.kubeconfig)),
            *("-e", "apiserver-restart-drift", "-e", "image-change"),
            *("-a", "helm", "-a", "operator", "--output", str(tmp_path)),
        ],
    )
    run_dir = latest_run(tmp_path)
    results = load_results(run_dir)
    assert results.complete, result.output
    assert "cluster-wide faults on the fault cluster" in result.output

    wide = [t for t in results.trials if t.experiment == "apiserver-restart-drift"]
    rest = [t for t in results.trials if t.experiment == "image-change"]
    assert len(wide) == 2 and len(rest) == 2
    (name,) = {t.cluster for t in wide}
    assert name is not None and name == f"{main.name}-{results.run_id.lower()}"
    assert all(t.cluster is None for t in rest)
    # results.json names the cluster only for a trial that ran elsewhere.
    raw = json.loads((run_dir / "results.json").read_text())["trials"]
    assert sorted("cluster" in t for t in raw) == [False, False, True, True]
    # The same verdicts as on one cluster: the operator heals the drift made across the API
    # server's restart, Helm does not; Helm leaves a changed image, the operator reverts it.
    verdicts = {(t.experiment, t.approach): t.status for t in results.trials}
    assert verdicts == {
        ("apiserver-restart-drift", "helm"): "not-healed",
        ("apiserver-restart-drift", "operator"): "healed",
        ("image-change", "helm"): "not-healed",
        ("image-change", "operator"): "healed",
    }, [t.error for t in results.trials]

    # The restart was the sibling's: once, for both trials; the run's API server kept its pid.
    journals = [json.loads((run_dir / str(t.journal)).read_text()) for t in wide]
    restarts = [j["run"][0]["output"] for j in journals]
    assert len({r["newPid"] for r in restarts}) == 1 and restarts[0]["oldPid"] != apiserver
    assert main.component_pid("kube-apiserver") == apiserver
    _gone(name)
    assert not _siblings(cluster)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupt_during_a_fault_cluster_trial_leaves_no_sibling_behind(
    cluster: ClusterTarget, tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "reports"
    process = subprocess.Popen(
        [
            *(COMPARE, "run", "--kubeconfig", str(cluster.kubeconfig)),
            *("-e", "apiserver-restart-drift", "-e", "image-change"),
            *("-a", "helm", "--heal-window", "60", "--output", str(out)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As in a terminal (a session started in the background ignores SIGINT).
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        # Under way on the sibling: its kubeconfig is listed for the run once it is ready,
        # and Helm's trial then waits out its long window.
        deadline = time.monotonic() + 120
        ready: list[Path] = []
        while not ready and time.monotonic() < deadline:
            assert process.poll() is None, "the run ended before it could be interrupted"
            clusters = cache_dir() / "kwok" / "clusters"
            ready = list(clusters.glob(f"{cluster_key(cluster)}-*/kubeconfig.run.yaml"))
            time.sleep(0.2)
        assert ready, "the fault cluster was not ready in time"
        sibling = EmbeddedCluster(ready[0].parent.name)
        time.sleep(8)  # its trial deployed and injected: in the heal window
        pids = [p for c in ("etcd", "kube-apiserver") if (p := sibling.component_pid(c))]
        assert pids
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    _gone(sibling.name)
    assert not _siblings(cluster)
    assert not [p for p in pids if _alive(p)]


class _RefusedElsewhere(App):
    """The built-in WebApp, whose shared parts cannot be started on any cluster but the
    run's: the fault cluster's preparation fails as a real one would (one line)."""

    home: Path = Path()

    def prepare(self, approach: Approach, cluster: ClusterTarget) -> None:
        if cluster.kubeconfig != self.home:
            raise CompareError("the operator did not start (refused for this test)")
        super().prepare(approach, cluster)


class _Notes:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def note(self, text: str) -> None:
        self.lines.append(text)

    def phase(self, plan: TrialPlan, phase: str) -> None:
        return None

    def finished(self, plan: TrialPlan, result: TrialResult) -> None:
        return None


def test_a_fault_cluster_that_cannot_be_made_is_one_line_and_the_run_goes_on_as_before(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    app = _RefusedElsewhere(builtin_target(load_webapp(DEFAULT_APP), DEFAULT_APP))
    app.home = cluster.kubeconfig
    request = RunRequest(
        approaches=("helm", "operator"),
        experiments=tuple(load_experiments(["etcd-restart-drift", "image-change"])),
        app=app,
        output_dir=tmp_path,
    )
    run = Run(cluster, request)
    notes = _Notes()
    results = run.execute(notes)
    assert results.complete
    (fell_back,) = [line for line in notes.lines if line.startswith("could not make")]
    assert "refused for this test" in fell_back and "\n" not in fell_back
    assert "run on the run's cluster, alone" in fell_back
    # Every trial ran on the run's cluster, the cluster-wide ones alone, as without it.
    assert all(t.cluster is None for t in results.trials)
    verdicts = {(t.experiment, t.approach): t.status for t in results.trials}
    assert verdicts == {
        ("etcd-restart-drift", "helm"): "not-healed",
        ("etcd-restart-drift", "operator"): "healed",
        ("image-change", "helm"): "not-healed",
        ("image-change", "operator"): "healed",
    }, [t.error for t in results.trials]
    assert not _siblings(cluster)
