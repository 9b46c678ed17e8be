"""Ctrl-C and SIGTERM: finished trials saved (complete: false), namespaces removed, non-zero."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import operator_status
from compare.cluster import ClusterTarget
from compare.results import RESULTS_FILE, load_results
from compare.run.trial import RUN_LABEL

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator_left_as_found")]

COMPARE = str(Path(sys.executable).with_name("compare"))


def _wait_for_a_trial(out: Path, process: subprocess.Popen[str], timeout: float) -> Path:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the run ended before it could be interrupted"
        for results in out.glob(f"*/{RESULTS_FILE}"):
            try:
                if json.loads(results.read_text())["trials"]:
                    return results.parent
            except (ValueError, KeyError):
                pass  # never half-written (atomic), but the directory may be brand new
        time.sleep(0.1)
    raise AssertionError("no trial finished in time")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_an_interrupted_run_keeps_finished_trials_and_cleans_up(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path, signum: int
) -> None:
    out = tmp_path / "reports"
    # Helm drift trials wait out a long window: they are under way when the signal comes.
    process = subprocess.Popen(
        [
            *(COMPARE, "run", "--kubeconfig", str(cluster.kubeconfig)),
            *("-e", "image-change", "-e", "service-delete", "-e", "pod-delete-one"),
            *("-a", "helm", "-a", "operator"),
            *("--heal-window", "60", "--parallel", "3", "--output", str(out)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As in a terminal: a test session started in the background (`cmd &` without job
        # control) ignores SIGINT, and a child inherits that, so Ctrl-C would never arrive.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        run_dir = _wait_for_a_trial(out, process, timeout=120)
        process.send_signal(signum)
        stdout, stderr = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stdout + stderr
    assert "Traceback" not in stderr
    assert "interrupted:" in stderr and "complete: false" in stderr

    results = load_results(run_dir)
    assert not results.complete and results.finished_at is None
    assert 1 <= len(results.trials) < 5
    assert all(t.status != "error" for t in results.trials), [t.error for t in results.trials]
    for trial in results.trials:
        assert trial.journal is not None and (run_dir / trial.journal).is_file()

    # Every namespace of the run is gone or going, and no WebApp is left behind in them.
    core = client.CoreV1Api(api)
    left = core.list_namespace(label_selector=f"{RUN_LABEL}={results.run_id}").items
    assert all(ns.status.phase == "Terminating" for ns in left), [ns.metadata.name for ns in left]
    custom = client.CustomObjectsApi(api)
    webapps = custom.list_cluster_custom_object("example.com", "v1", "webapps")["items"]
    ours = {ns.metadata.name for ns in left}
    assert not [w for w in webapps if w["metadata"]["namespace"] in ours]
    status = operator_status(cluster)
    assert status is not None and status.running
