"""The verdict rules end to end: no-fault, a flap that never settles, a cluster that goes away.

Real cluster, real chaostoolkit, the real operator; the activities are in chaos_helpers.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.cli import app
from compare.cluster import ClusterTarget
from compare.results import latest_run, load_results
from compare.run import engine
from compare.run.trial import RUN_LABEL
from tests.run.chaos_helpers import PROXIES, LoopbackProxy
from tests.run.experiment_files import TARGET, _action, _experiment

pytestmark = [pytest.mark.cluster, pytest.mark.usefixtures("operator_left_as_found")]


def _run(kubeconfig: Path, out: Path, *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(
        app, ["run", "--kubeconfig", str(kubeconfig), "--output", str(out), *args]
    )
    return result.exit_code, result.output


def _write(path: Path, title: str, action: dict[str, object], approaches: list[str]) -> Path:
    extension = {
        "name": "compare",
        "fault": title,
        "approaches": approaches,
        "evidence": {"target": "deployment", "field": "deployment.spec.replicas"},
    }
    path.write_text(json.dumps(_experiment(title, action, extension)))
    return path


def test_an_injection_that_changes_nothing_is_no_fault(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    # Scaling to the replicas it already has: the API server stores nothing new.
    noop = _write(
        tmp_path / "scale-to-three.json",
        "Scale to the same replicas",
        _action("scale-same", "chaosk8s.deployment.actions", "scale_deployment",
                replicas=3, **TARGET),
        ["helm", "operator"],
    )  # fmt: skip
    code, output = _run(cluster.kubeconfig, tmp_path / "out", "-e", str(noop), "--heal-window", "2")
    assert code == 0, output
    results = load_results(latest_run(tmp_path / "out"))
    assert {t.approach: t.status for t in results.trials} == {
        "helm": "no-fault",
        "operator": "no-fault",
    }
    for trial in results.trials:
        assert trial.time_to_heal_seconds is None and trial.evidence.fault_seen is None
        assert trial.evidence.chaos_agrees is True  # chaostoolkit: completed


def test_a_drift_reapplied_in_the_background_never_settles(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    # The operator reverts each scale within a fraction of a second; the drift is back every
    # 0.6 s for 8 s (on a fixed schedule), so no healed stretch lasts the 1 s settle period
    # inside the 5 s window.
    flapping = _write(
        tmp_path / "keep-scaling.json",
        "Keep scaling to one",
        _action("keep-scaling", "tests.run.chaos_helpers", "keep_scaling",
                replicas=1, seconds=8.0, interval=0.6, **TARGET),
        ["operator"],
    )  # fmt: skip
    code, output = _run(
        cluster.kubeconfig,
        tmp_path / "out",
        *("-e", str(flapping), "--approach", "operator", "--heal-window", "5"),
    )
    results = load_results(latest_run(tmp_path / "out"))
    (trial,) = results.trials
    assert trial.status == "not-healed", (trial.status, trial.error, output)
    assert trial.time_to_first_heal_seconds is not None  # it did heal, briefly
    assert len(trial.evidence.flaps) >= 2
    assert trial.evidence.fault_seen is not None and trial.evidence.fault_seen.how == "event"
    assert code == 0, output


def test_a_cluster_that_stops_answering_mid_trial_is_an_error(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The proxy never answers again: the run's end-of-run wait for the API server (60 s, for a
    # control plane that restarts) can only run out; a short one says the same.
    monkeypatch.setattr(engine, "LEFTOVER_API_WAIT_S", 2.0)
    config = yaml.safe_load(cluster.kubeconfig.read_text())
    server = urlsplit(config["clusters"][0]["cluster"]["server"])
    proxy = LoopbackProxy((server.hostname or "127.0.0.1", server.port or 443))
    PROXIES[proxy.port] = proxy
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    through_proxy = tmp_path / "kubeconfig"
    through_proxy.write_text(yaml.safe_dump(config))
    cut = _write(
        tmp_path / "scale-and-cut.json",
        "Scale, then the cluster goes away",
        _action("scale-and-cut", "tests.run.chaos_helpers", "scale_and_cut",
                port=proxy.port, **TARGET),
        ["helm"],
    )  # fmt: skip
    try:
        code, output = _run(
            through_proxy,
            tmp_path / "out",
            *("-e", str(cut), "--approach", "helm", "--heal-window", "8", "--recheck", "0.5"),
        )
        results = load_results(latest_run(tmp_path / "out"))
        (trial,) = results.trials
        assert trial.status == "error", (trial.status, output)
        assert trial.error is not None and "\n" not in trial.error
        assert "the cluster stopped answering" in trial.error
        assert code == 1, output
        assert "Traceback" not in output
    finally:
        proxy.cut()
        PROXIES.pop(proxy.port, None)
        # The run could not remove its namespace through the dead proxy: do it directly.
        core = client.CoreV1Api(api)
        run_id = latest_run(tmp_path / "out").name
        for ns in core.list_namespace(label_selector=f"{RUN_LABEL}={run_id}").items:
            core.delete_namespace(ns.metadata.name, propagation_policy="Background")
