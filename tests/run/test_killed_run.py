"""A run killed with SIGKILL mid-trial is cleaned up by the next one (`compare.run.owners`):
its trial namespace and Helm release are removed, with one line saying so; `compare status
-A` lists the leftovers until then, and right after a run (its namespaces terminating) it
exits 0."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import get, load_target
from compare.approaches.arms import preflight_arm
from compare.cli import app
from compare.cluster import ClusterTarget, EmbeddedCluster, cluster_key
from compare.paths import CHARTS_DIR
from compare.run.owners import (
    OWNER_HOST,
    OWNER_PID,
    OWNER_STARTED,
    RUN_LABEL,
    clean_dead_runs,
    fault_cluster_record,
    owner_annotations,
    preflight_labels,
    process_start,
)

pytestmark = pytest.mark.cluster

COMPARE = str(Path(sys.executable).with_name("compare"))
runner = CliRunner()


def _trial_namespace(core: client.CoreV1Api, pid: int) -> client.V1Namespace | None:
    for ns in core.list_namespace(label_selector=RUN_LABEL).items:
        if (ns.metadata.annotations or {}).get(OWNER_PID) == str(pid):
            return ns
    return None


def _helm_records(core: client.CoreV1Api, namespace: str) -> list[str]:
    try:
        found = core.list_namespaced_secret(namespace, label_selector="owner=helm").items
    except client.ApiException as exc:
        if exc.status == 404:
            return []
        raise
    return [s.metadata.name for s in found]


def _run(kubeconfig: Path, out: Path, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [COMPARE, "run", "--kubeconfig", str(kubeconfig), "-a", "helm", "-o", str(out), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # killed with its children, as a CI runner kills a job
    )


def test_the_next_run_removes_what_a_killed_run_left(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    core = client.CoreV1Api(api)
    # A helm drift trial waits out its window: it is under way when the kill comes.
    killed = _run(cluster.kubeconfig, tmp_path / "a", "-e", "image-change", "--heal-window", "60")
    try:
        deadline = time.monotonic() + 180
        while True:
            assert killed.poll() is None, killed.communicate()
            assert time.monotonic() < deadline, "no trial deployed in time"
            found = _trial_namespace(core, killed.pid)
            if found is not None and _helm_records(core, found.metadata.name):
                break
            time.sleep(0.2)
        os.killpg(killed.pid, signal.SIGKILL)
        killed.wait(timeout=30)
    finally:
        if killed.poll() is None:
            os.killpg(killed.pid, signal.SIGKILL)
            killed.wait()
    namespace, run_id = found.metadata.name, found.metadata.labels[RUN_LABEL]
    # Left behind: nobody removed it.
    time.sleep(1.0)
    assert core.read_namespace(namespace).status.phase == "Active"
    assert _helm_records(core, namespace)

    listed = runner.invoke(app, ["status", "-A", "--kubeconfig", str(cluster.kubeconfig)])
    assert listed.exit_code == 0, listed.output
    assert f"left by a killed run: run {run_id} (pid {killed.pid} on " in listed.stdout
    assert namespace in listed.stdout and "compare cleanup" in listed.stdout

    again = _run(cluster.kubeconfig, tmp_path / "b", "-e", "pod-delete-one", "--heal-window", "30")
    stdout, stderr = again.communicate(timeout=600)
    assert again.returncode == 0, stdout + stderr
    assert f"removed what killed runs left (run {run_id}: {namespace})" in stderr, stderr
    assert "Traceback" not in stderr

    deadline = time.monotonic() + 120
    while True:
        try:
            core.read_namespace(namespace)
        except client.ApiException as exc:
            assert exc.status == 404
            break
        assert time.monotonic() < deadline, f"{namespace} still there"
        time.sleep(0.5)

    # Right after the run: its own namespaces are terminating; they are skipped, not an error.
    after = runner.invoke(app, ["status", "-A", "--kubeconfig", str(cluster.kubeconfig)])
    assert after.exit_code == 0, after.output
    assert run_id not in after.stdout


def test_status_skips_a_namespace_being_deleted(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    kc = str(cluster.kubeconfig)
    deployed = runner.invoke(app, ["deploy", "helm", "-n", namespace, "--kubeconfig", kc])
    assert deployed.exit_code == 0, deployed.output
    core = client.CoreV1Api(api)
    # A finalizer nobody removes holds the namespace in phase Terminating.
    hold = client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name="hold", finalizers=["example.com/hold"])
    )
    core.create_namespaced_config_map(namespace, hold)
    try:
        core.delete_namespace(namespace)
        deadline = time.monotonic() + 30
        while core.read_namespace(namespace).status.phase != "Terminating":
            assert time.monotonic() < deadline
            time.sleep(0.2)
        listed = runner.invoke(app, ["status", "-A", "--kubeconfig", kc])
        assert listed.exit_code == 0, listed.output
        assert namespace not in listed.stdout
    finally:
        core.patch_namespaced_config_map("hold", namespace, {"metadata": {"finalizers": None}})


def _leftover(core: client.CoreV1Api, namespace: str, run_id: str, **owner: str) -> None:
    """A trial namespace as a run records it (`compare.run.trial.create_namespace`)."""
    notes = {**owner_annotations(), **owner}
    meta = client.V1ObjectMeta(name=namespace, labels={RUN_LABEL: run_id}, annotations=notes)
    core.create_namespace(client.V1Namespace(metadata=meta))


def _gone(core: client.CoreV1Api, namespace: str) -> bool:
    try:
        found = core.read_namespace(namespace)
    except client.ApiException as exc:
        assert exc.status == 404
        return True
    return found.status.phase == "Terminating"


def test_cleanup_removes_dead_runs_and_named_ones_only(
    cluster: ClusterTarget, api: client.ApiClient
) -> None:
    core = client.CoreV1Api(api)
    kc = ["--kubeconfig", str(cluster.kubeconfig)]
    ended = subprocess.Popen(["true"])
    ended.wait()
    suffix = uuid.uuid4().hex[:4]
    dead, elsewhere, alive = (f"cmp-h-{kind}-1-{suffix}" for kind in ("dead", "far", "live"))
    dead_run, far_run, live_run = (f"20260101T00000{i}Z-{suffix}" for i in range(3))
    _leftover(core, dead, dead_run, **{OWNER_PID: str(ended.pid)})
    _leftover(core, elsewhere, far_run, **{OWNER_HOST: "elsewhere.example"})
    _leftover(core, alive, live_run, **{OWNER_PID: "1"}, **{OWNER_STARTED: process_start(1) or ""})
    try:
        # A release in the dead run's namespace: uninstalled with it.
        deployed = runner.invoke(app, ["deploy", "helm", "-n", dead, *kc])
        assert deployed.exit_code == 0, deployed.output

        swept = runner.invoke(app, ["cleanup", *kc])
        assert swept.exit_code == 0, swept.output
        # Only the dead run's (and any other dead run's the cluster has).
        assert "removed " in swept.stderr and dead in swept.stderr
        assert _gone(core, dead) and not _helm_records(core, dead)
        assert not _gone(core, elsewhere) and not _gone(core, alive)

        refused = runner.invoke(app, ["cleanup", "--run", live_run, *kc])
        assert refused.exit_code == 2
        assert f"--run {live_run}: the run is still under way (pid 1 on" in refused.stderr
        assert not _gone(core, alive)

        named = runner.invoke(app, ["cleanup", "--run", far_run, *kc])
        assert named.exit_code == 0, named.output
        assert f"removed 1 namespace: {elsewhere}" in named.stderr
        assert _gone(core, elsewhere)
    finally:
        for namespace in (dead, elsewhere, alive):
            if not _gone(core, namespace):
                core.delete_namespace(namespace)


def _killed_runs_record(name: str) -> Path:
    """The owner record of sibling cluster `name`, as a run whose process is gone left it."""
    ended = subprocess.Popen(["true"])
    ended.wait(timeout=30)
    record = fault_cluster_record(name)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text(json.dumps({**owner_annotations(), OWNER_PID: str(ended.pid)}))
    return record


def test_a_killed_runs_fault_cluster_is_deleted(cluster: ClusterTarget) -> None:
    # As a run on the embedded cluster makes it (`compare.run.sibling.FaultCluster`), then
    # its process is gone.
    source = EmbeddedCluster(cluster_key(cluster))
    sibling = source.sibling(f"killed-{uuid.uuid4().hex[:4]}")
    record = _killed_runs_record(sibling.name)
    try:
        sibling.up_like(source)
        assert sibling.status().running
        lines = clean_dead_runs(cluster)
        assert f"removed the sibling clusters of killed runs: {sibling.name}" in lines, lines
        assert not sibling.status().exists
        assert not record.exists()
    finally:
        if sibling.status().exists:
            sibling.down()
        record.unlink(missing_ok=True)


def test_cleanup_removes_a_killed_runs_sibling_cluster_too(cluster: ClusterTarget) -> None:
    # A run killed while it was making a trial cluster: its owner recorded, the cluster not
    # (yet) there. `compare cleanup` deletes what there is and forgets the record.
    source = EmbeddedCluster(cluster_key(cluster))
    sibling = source.sibling(f"killed-{uuid.uuid4().hex[:4]}-2")
    record = _killed_runs_record(sibling.name)
    try:
        result = runner.invoke(app, ["cleanup", "--kubeconfig", str(cluster.kubeconfig)])
        assert result.exit_code == 0, result.output
        assert f"removed the sibling clusters of killed runs: {sibling.name}" in result.stderr
        assert not record.exists()
    finally:
        record.unlink(missing_ok=True)


def test_a_preflight_namespace_is_owned_like_a_trials(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    # A target's chart arm, deployed once by a run's preflight: its scratch namespace carries
    # the owner while it exists (a run killed then leaves it to the next one).
    path = tmp_path / "compare.yaml"
    path.write_text(
        json.dumps(
            {
                "apiVersion": "compare.example.com/v1alpha1",
                "kind": "Target",
                "name": "shop",
                "helm": {"chart": {"path": str(CHARTS_DIR / "webapp")}, "release": "shop"},
            }
        )
    )
    target = load_target(path)
    core = client.CoreV1Api(api)
    seen: list[client.V1Namespace] = []
    done = threading.Event()

    def look() -> None:
        while not done.is_set() and not seen:
            seen.extend(
                ns
                for ns in core.list_namespace(label_selector=RUN_LABEL).items
                if ns.metadata.name.startswith("cmp-preflight-")
                and (ns.metadata.annotations or {}).get(OWNER_PID) == str(os.getpid())
            )
            time.sleep(0.05)

    watcher = threading.Thread(target=look, daemon=True)
    watcher.start()
    try:
        preflight_arm(
            get("helm"),
            cluster,
            target,
            timeout=120,
            labels=preflight_labels(),
            annotations=owner_annotations(),
        )
    finally:
        done.set()
        watcher.join(10)
    assert seen, "the preflight namespace was never seen with its owner"
    assert seen[0].metadata.labels[RUN_LABEL] == f"preflight-{os.getpid()}"
