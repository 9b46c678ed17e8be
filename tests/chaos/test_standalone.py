"""The experiments run on their own with `chaos run`, outside our CLI, against a given WebApp.

The `namespace` fixture's namespace is deleted after each test: the operator test deletes its
WebApp first (its finalizer needs the running operator).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from compare.approaches.operator import Operator
from compare.approaches.operator.controllers import operator_status
from compare.chaos import actions, probes
from compare.chaos.cluster import pointed_at
from compare.cluster import ClusterTarget
from compare.paths import EXPERIMENTS_DIR
from compare.webapp import load_webapp
from tests.helpers import deploy_builtin, deploy_webapp, undeploy_builtin

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator_left_as_found")]

CHAOS = str(Path(sys.executable).parent / "chaos")
WAIT = "wait-for-desired-state"


def chaos_run(
    cluster: ClusterTarget, experiment: str, journal: Path, *args: str, **env: str
) -> dict[str, Any]:
    done = subprocess.run(
        [CHAOS, "--no-log-file", "run", "--journal-path", str(journal), *args,
         str(EXPERIMENTS_DIR / f"{experiment}.json")],
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig), **env},
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    # chaos exits 1 when the steady state deviated; the journal tells.
    assert done.returncode in (0, 1), done.stdout + done.stderr
    result: dict[str, Any] = json.loads(journal.read_text())
    return result


def test_helm_drift_deviates_under_chaos_run(
    cluster: ClusterTarget, namespace: str, tmp_path: Path
) -> None:
    deploy_webapp(cluster, load_webapp(), namespace)
    journal = chaos_run(
        cluster,
        "image-change",
        tmp_path / "journal.json",
        *("--var", f"webapp_namespace={namespace}", "--var", "heal_window:float=1.5"),
    )
    assert journal["status"] == "completed" and journal["deviated"] is True
    change, wait = journal["run"]
    assert change["output"]["value"] == "myapp:chaos"
    assert wait["output"] is False  # nothing brought the image back
    assert journal["steady_states"]["before"]["steady_state_met"] is True
    assert journal["steady_states"]["after"]["steady_state_met"] is False


def test_operator_heals_drift_made_while_it_was_stopped_under_chaos_run(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    webapp = load_webapp()
    deploy_builtin(cluster, Operator(), webapp, namespace)
    try:
        journal = chaos_run(
            cluster,
            "operator-down-drift",
            tmp_path / "journal.json",
            WEBAPP_NAMESPACE=namespace,
            WEBAPP_HEAL_WINDOW="30",
        )
        assert journal["status"] == "completed" and journal["deviated"] is False, journal
        names = [r["activity"]["name"] for r in journal["run"]]
        assert names == [
            "stop-operator",
            "scale-to-one",
            "start-operator",
            "wait-for-desired-state",
        ]
        assert all(r["status"] == "succeeded" for r in journal["run"])
        assert journal["run"][-1]["output"] is True
        status = operator_status(cluster)
        assert status is not None and status.running
    finally:
        undeploy_builtin(cluster, Operator(), webapp, namespace)


def test_the_probes_judge_the_live_state(cluster: ClusterTarget, namespace: str) -> None:
    deploy_webapp(cluster, load_webapp(), namespace)
    with pointed_at(cluster):
        assert probes.desired_state_holds(ns=namespace)
        assert probes.desired_state_mismatches(ns=namespace) == []
        drift = actions.set_service_port("webapp-demo", namespace, port=9090)
        assert drift["value"] == 9090 and drift["field"] == "service.spec.ports[http].port"
        assert probes.desired_state_mismatches(ns=namespace) == [
            "service.spec.ports[http].port: want 8080, got 9090"
        ]
        assert not probes.wait_for_desired_state(ns=namespace, timeout=0.3, interval=0.1)
