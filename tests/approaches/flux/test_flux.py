"""The flux approach against the real cluster with the real source-controller and
helm-controller (built from their Go modules), serving charts/webapp from a local Helm
repository. Nothing here imitates a controller: every heal is helm-controller's."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from compare.approaches import builtin_target, desired_manifest, get
from compare.approaches.flux.controllers import (
    FLUX as PROCESS_SET,
)
from compare.approaches.flux.controllers import (
    PROCESSES,
    check_interval,
    last_drift_event,
    read_helm_release,
    start_flux,
)
from compare.cluster import ClusterTarget
from compare.deploy.local import CLUSTER_UID_KEY
from compare.deploy.processes import alive
from compare.errors import CompareError
from compare.judge import with_api_defaults
from compare.webapp import WebApp
from tests.helpers import current_problems, make_webapp

pytestmark = pytest.mark.cluster

INTERVAL_S = 2.0


FLUX = get("flux").configured(interval=INTERVAL_S)


def problems(api: client.ApiClient, namespace: str, webapp: WebApp) -> list[str]:
    desired = with_api_defaults(api, namespace, desired_manifest(FLUX.name, webapp, namespace))
    return current_problems(api, namespace, desired)


def deploy_flux(cluster: ClusterTarget, webapp: WebApp, namespace: str) -> None:
    """The built-in WebApp as its target's flux arm (the approach's one deploy path)."""
    FLUX.deploy_target(cluster, builtin_target(webapp), namespace, timeout=120)


def undeploy_flux(cluster: ClusterTarget, webapp: WebApp, namespace: str) -> bool:
    return FLUX.undeploy_target(cluster, builtin_target(webapp), namespace, timeout=60)


def wait_for(check, timeout: float) -> float | None:  # type: ignore[no-untyped-def]
    """Seconds until check() is true (polled every 50 ms), None when it never was."""
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        if check():
            return time.monotonic() - started
        time.sleep(0.05)
    return None


def compare_cli(cluster: ClusterTarget, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(Path(sys.executable).parent / "compare"),
            "--kubeconfig",
            str(cluster.kubeconfig),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_deploy_ready_and_image_change_reverted_within_an_interval(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("fluxy")
    deploy_flux(cluster, webapp, namespace)
    release = read_helm_release(api, namespace, "fluxy")
    assert release is not None
    ready = [c for c in release["status"]["conditions"] if c["type"] == "Ready"]
    assert ready and ready[0]["status"] == "True"
    assert release["spec"]["driftDetection"] == {"mode": "enabled"}
    assert problems(api, namespace, webapp) == []

    apps = client.AppsV1Api(api)
    apps.patch_namespaced_deployment(
        "fluxy",
        namespace,
        {"spec": {"template": {"spec": {"containers": [{"name": "webapp", "image": "x:chaos"}]}}}},
    )
    injected = time.monotonic()

    def image() -> str:
        live = apps.read_namespaced_deployment("fluxy", namespace)
        return str(live.spec.template.spec.containers[0].image)

    assert image() == "x:chaos"
    reverted = wait_for(lambda: image() == "shop:v1", timeout=6 * INTERVAL_S + 10)
    assert reverted is not None, "helm-controller did not revert the image"
    # One interval until the next reconcile, plus the reconcile itself on a loaded machine.
    assert reverted <= INTERVAL_S + 5.0, f"reverted after {reverted:.1f}s"
    assert wait_for(lambda: problems(api, namespace, webapp) == [], timeout=30) is not None
    event = last_drift_event(api, namespace, "fluxy")
    assert event is not None and "Deployment" in " ".join(event["message"])
    assert time.monotonic() - injected < 60


def test_deleted_deployment_comes_back_with_a_new_uid(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("gone")
    deploy_flux(cluster, webapp, namespace)
    apps = client.AppsV1Api(api)
    before = apps.read_namespaced_deployment("gone", namespace).metadata.uid
    apps.delete_namespaced_deployment("gone", namespace, propagation_policy="Background")

    def uid() -> str | None:
        try:
            return str(apps.read_namespaced_deployment("gone", namespace).metadata.uid)
        except client.ApiException as exc:
            if exc.status == 404:
                return None
            raise

    # Measured: helm-controller's drift detection sees the missing object ("resource deleted")
    # and its correction creates it again - a new object, with a new UID.
    back = wait_for(lambda: uid() not in (None, before), timeout=6 * INTERVAL_S + 10)
    assert back is not None, "helm-controller did not recreate the deleted Deployment"
    assert back <= INTERVAL_S + 5.0, f"recreated after {back:.1f}s"
    assert wait_for(lambda: problems(api, namespace, webapp) == [], timeout=30) is not None


def test_undeploy_removes_release_and_objects(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    webapp = make_webapp("leaving")
    deploy_flux(cluster, webapp, namespace)
    assert undeploy_flux(cluster, webapp, namespace) is True
    assert read_helm_release(api, namespace, "leaving") is None
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    assert apps.list_namespaced_deployment(namespace).items == []
    assert core.list_namespaced_service(namespace).items == []
    # Helm's release record (a Secret) went with the release.
    secrets = core.list_namespaced_secret(namespace, label_selector="owner=helm").items
    assert secrets == []
    assert undeploy_flux(cluster, webapp, namespace) is False


def test_status_shows_ready_condition_and_last_drift(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    deploy_flux(cluster, make_webapp("shown"), namespace)
    client.AppsV1Api(api).patch_namespaced_deployment("shown", namespace, {"spec": {"replicas": 5}})
    assert wait_for(lambda: last_drift_event(api, namespace, "shown") is not None, 20) is not None
    rows: list[str] = []

    def ready_row() -> bool:
        # While helm-controller corrects the drift it reported, its Ready condition is Unknown
        # (Progressing); once corrected, True again, the drift still named as the last one.
        result = compare_cli(cluster, "status", "-n", namespace)
        assert result.returncode == 0, result.stderr
        rows.append(next(line for line in result.stdout.splitlines() if line.startswith("flux")))
        return "Ready True" in rows[-1]

    assert wait_for(ready_row, 30) is not None, rows
    assert "shown" in rows[-1] and "last drift" in rows[-1]


def test_a_helm_release_that_never_gets_ready_is_one_line_and_rolled_back(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    # Values the chart's schema accepts but the API server refuses (an invalid annotation key):
    # helm-controller's install fails, the HelmRelease is never Ready.
    values = tmp_path / "bad.yaml"
    values.write_text(yaml.safe_dump({"podAnnotations": {"bad key!": "x"}}))
    namespace = f"t-flux-bad-{int(time.time() * 1000) % 100000}"
    result = compare_cli(
        cluster, "deploy", "flux", "-n", namespace, "--values", str(values), "--timeout", "60"
    )
    assert result.returncode == 1
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    # One line: helm-controller's own reason, the API server's refusal quoted in it.
    assert len(lines) == 1, lines
    assert f"HelmRelease {namespace}/webapp-demo failed: InstallFailed" in lines[0]
    assert "spec.template.annotations" in lines[0]
    # The deploy created the namespace: the rollback removed it with its HelmRelease.
    core = client.CoreV1Api(api)

    def gone() -> bool:
        try:
            core.read_namespace(namespace)
            return False
        except client.ApiException as exc:
            return exc.status == 404

    assert wait_for(gone, timeout=60) is not None


def test_missing_binaries_and_a_failing_controller_leave_nothing_running(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    PROCESS_SET.stop(cluster)
    with pytest.raises(CompareError) as missing:
        start_flux(cluster, bin_dir=tmp_path)
    assert "source-controller binary is missing" in missing.value.message
    assert "\n" not in missing.value.message
    assert not any(alive(p) for p in PROCESS_SET.status(cluster).processes.values())

    # The real helm-controller, refusing its configuration at start-up.
    with pytest.raises(CompareError) as failed:
        start_flux(cluster, extra_args={"helm-controller": ["--concurrent=many"]})
    assert "helm-controller exited during start-up" in failed.value.message
    assert 'invalid argument "many" for "--concurrent"' in failed.value.message
    assert "\n" not in failed.value.message
    status = PROCESS_SET.status(cluster)
    assert status.processes == {} or not any(alive(p) for p in status.processes.values())
    # A clean start afterwards works and runs all three.
    handle = start_flux(cluster)
    assert handle.running and set(handle.processes) == set(PROCESSES)


def test_processes_left_by_an_earlier_cluster_of_this_name_are_replaced(
    cluster: ClusterTarget,
) -> None:
    # A cluster deleted without `compare cluster down` and started again under its name has a
    # new kube-system uid: what runs with the old cluster's tokens is stopped, not reused.
    before = start_flux(cluster)
    settings_path = before.state_dir / "settings.json"
    settings = json.loads(settings_path.read_text())
    this_cluster = settings[CLUSTER_UID_KEY]
    settings_path.write_text(json.dumps({**settings, CLUSTER_UID_KEY: "an-earlier-cluster"}))
    after = start_flux(cluster)
    assert after.running
    for name in PROCESSES:
        assert after.processes[name].pid != before.processes[name].pid, name
        assert not alive(before.processes[name]), name
    assert json.loads(settings_path.read_text())[CLUSTER_UID_KEY] == this_cluster
    # The same cluster again: nothing restarts.
    again = start_flux(cluster)
    assert {n: p.pid for n, p in again.processes.items()} == {
        n: p.pid for n, p in after.processes.items()
    }


def test_interval_must_be_shorter_than_the_heal_window() -> None:
    with pytest.raises(CompareError) as error:
        check_interval(12.0, 10.0)
    assert error.value.message.startswith("--flux-interval 12s must be shorter than")
    check_interval(5.0, 10.0)


def test_an_interval_not_shorter_than_an_exact_heal_window_is_a_usage_error(
    cluster: ClusterTarget,
) -> None:
    # Without --exact-heal-window the interval is added to Flux's window: it always fits.
    result = compare_cli(
        cluster,
        *("run", "-a", "flux", "--flux-interval", "12", "--heal-window", "10"),
        "--exact-heal-window",
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "error: --flux-interval 12s must be shorter than the heal window (10s): helm-controller "
        "corrects drift only at its next reconcile"
    ]


def test_a_run_of_the_flux_approach_records_the_interval_and_helm_controllers_detection(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    result = compare_cli(
        cluster,
        "run",
        "-a",
        "flux",
        "-e",
        "image-change",
        "--flux-interval",
        str(INTERVAL_S),
        "--heal-window",
        "15",
        "-o",
        str(tmp_path),
    )
    assert result.returncode == 0, result.stderr
    (run_dir,) = tmp_path.iterdir()
    results = json.loads((run_dir / "results.json").read_text())
    assert results["settings"]["approaches"] == ["flux"]
    assert results["settings"]["approachSettings"]["flux"] == {"intervalSeconds": INTERVAL_S}
    # Its trials' window: the 15 s asked for plus one jittered interval (its cadence).
    window = round(15 + INTERVAL_S * 1.05, 3)
    assert results["settings"]["healWindows"] == {
        "flux": {
            "healWindowSeconds": window,
            "cadenceSeconds": INTERVAL_S * 1.05,
            "cadence": f"HelmRelease interval {INTERVAL_S:g} s + 5 % jitter",
            "cadenceAdded": True,
        }
    }
    (trial,) = results["trials"]
    assert trial["healWindowSeconds"] == window
    assert (trial["approach"], trial["status"]) == ("flux", "healed")
    assert trial["evidence"]["detectedBy"] == "Event DriftDetected (seen at arrival)"
    assert trial["evidence"]["after"] == "myapp:v1"
    assert f"flux interval {INTERVAL_S:g} s" in result.stdout
    assert f"heal window 15 s (flux {window:g} s: + HelmRelease interval" in result.stdout
