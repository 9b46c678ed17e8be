"""`compare cluster down` in another terminal while a run is under way: the run ends with a
clear line about the lost cluster (exit 2), never an "unexpected" error (exit 3) or a
traceback (issue 37, item 8). The run gets an embedded cluster of its own, stopped mid-run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from compare.cluster.embedded import EmbeddedCluster
from compare.results import RESULTS_FILE

pytestmark = pytest.mark.cluster

COMPARE = str(Path(sys.executable).with_name("compare"))
NAME = os.environ.get("COMPARE_TEST_CLUSTER", "compare-test") + "-down"


def test_cluster_down_during_a_run_is_one_line(tmp_path: Path) -> None:
    embedded = EmbeddedCluster(NAME)
    status = embedded.up()
    out = tmp_path / "reports"
    process = subprocess.Popen(
        [
            *(COMPARE, "run", "--kubeconfig", str(status.kubeconfig)),
            # Long enough to be under way when the cluster goes (3 s after the run began, gone
            # in 5 more); a trial whose cluster went waits out its window (60 s took a minute).
            *("-e", "image-change", "-a", "helm", "--heal-window", "20"),
            *("--output", str(out)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 180
        while not list(out.glob(f"*/{RESULTS_FILE}")):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the run did not start"
            time.sleep(0.2)
        time.sleep(3)  # the trial is under way: deploying, or watching its window
        down = subprocess.run(
            [COMPARE, "cluster", "down", "--name", NAME],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert down.returncode == 0, down.stderr
        stdout, stderr = process.communicate(timeout=300)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=30)
        embedded.down()
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert process.returncode == 2, (process.returncode, stdout, stderr)
    assert "Traceback" not in stderr and "unexpected" not in stderr, stderr
    assert lines and lines[-1].startswith("error: "), stderr
    assert "cluster" in lines[-1], lines[-1]
