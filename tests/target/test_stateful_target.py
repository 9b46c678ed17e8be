"""`compare run --target` on an app not shaped like the WebApp, end to end on the real cluster.

The app is tests/fixtures/charts/stateful-app: a StatefulSet behind a headless Service, its
settings in a mounted ConfigMap, a token in a Secret, a RoleBinding for its ServiceAccount.
Its release is deployed per trial and judged on its manifest; deleting the StatefulSet's first
pod heals (the StatefulSet controller makes `<name>-0` again with a new uid), changing the
ConfigMap's data, the Secret's data or deleting the RoleBinding does not (Helm does not
reconcile); faults for a Deployment only are skipped with the reason; the report lists them;
`compare check` holds for a policy saying so; no Secret value is ever written anywhere.
"""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from compare.approaches import load_target
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import render_target
from compare.results import latest_run, load_results
from compare.run import RunRequest, load_experiments
from compare.run.app import App
from compare.run.engine import runnable
from compare.run.workload import workload_of

runner = CliRunner()
CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "stateful-app"
TOKEN = "a-token-nobody-may-see"
HEALED = ("statefulset-pod-delete", "pod-delete-one")
KEPT = (
    "configmap-data-change",
    "secret-data-change",
    "rbac-binding-delete",
    "image-change",
    "service-port-change",
)
# Faults on a Deployment only: this app's workload is a StatefulSet.
DEPLOYMENT_ONLY = ("deployment-paused", "replicaset-delete")


def _target(folder: Path) -> Path:
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "stateful-app",
        "helm": {
            "chart": {"path": str(CHART)},
            "release": "sapp",
            "values": {"replicas": 2, "token": TOKEN},
        },
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _policy(folder: Path) -> Path:
    """A policy for this app that names no fault of the catalogue: by the kinds they act on."""
    data = {
        "version": 1,
        "requireComplete": True,
        "expectations": [
            {
                "approach": "helm",
                "faults": "all",
                "kinds": ["Pod"],
                "expect": "heals",
                "within": 8,
                "reason": "the StatefulSet controller makes deleted pods again",
            },
            {
                "approach": "helm",
                "faults": "all",
                "kinds": ["StatefulSet", "Service", "ConfigMap", "Secret", "RoleBinding"],
                "expect": "does-not-heal",
                "reason": "Helm reconciles nothing after the install",
            },
        ],
    }
    path = folder / "policy.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_the_charts_parts_are_its_statefulset_service_configmap_secret_and_binding(
    tmp_path: Path,
) -> None:
    target = load_target(_target(tmp_path))
    configuration = workload_of(
        render_target(target, target.chart_arm("helm"), "ns")
    ).configuration()
    assert configuration == {
        "webapp_workload": "sapp-stateful-app",
        "webapp_workload_kind": "statefulset",
        "webapp_pod_selector": (
            "app.kubernetes.io/name=stateful-app,app.kubernetes.io/instance=sapp"
        ),
        "webapp_container": "server",
        "webapp_service": "sapp-stateful-app",
        "webapp_service_port": "peer",
        "webapp_configmap": "sapp-stateful-app-config",
        "webapp_secret": "sapp-stateful-app-token",
        "webapp_rbac_binding": "sapp-stateful-app-read-config",
        "webapp_rbac_binding_kind": "rolebinding",
    }


@pytest.mark.cluster
def test_a_stateful_app_heals_a_deleted_pod_and_keeps_changed_config_secret_and_rbac(
    cluster: ClusterTarget, tmp_path: Path
) -> None:
    target = _target(tmp_path)
    out = tmp_path / "reports"
    chosen = [arg for name in (*HEALED, *KEPT, *DEPLOYMENT_ONLY) for arg in ("-e", name)]
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(target), "-a", "helm", *chosen, "--heal-window", "8"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    assert result.exit_code == 0, result.output
    run_dir = latest_run(out)
    results = load_results(run_dir)
    assert results.complete and results.target is not None
    trials = {t.experiment: t for t in results.trials}
    assert set(trials) == {*HEALED, *KEPT}

    # Healed: pod <name>-0 is back, the same name with a new uid, Ready.
    deleted = trials["statefulset-pod-delete"]
    assert deleted.status == "healed", (deleted.error, deleted.evidence.mismatches_at_end)
    before, after = deleted.evidence.uids_before, deleted.evidence.uids_after
    assert before is not None and after is not None
    assert len(before.pods) == len(after.pods) == 2
    assert len(set(after.pods) - set(before.pods)) == 1  # one new pod, the other kept
    assert deleted.evidence.ready_pods == 2 and "pod" in deleted.evidence.recreated

    # Faults written for any workload act on the StatefulSet, its container and the Service's
    # own port (named `peer`), and their evidence names them.
    assert trials["pod-delete-one"].status == "healed", trials["pod-delete-one"].error
    image = trials["image-change"].evidence
    assert image.target == "statefulset"
    assert image.field == "statefulset.spec.template.spec.containers[server].image"
    assert (image.before, image.during) == ("stateful-app:1.0", "myapp:chaos")
    port = trials["service-port-change"].evidence
    assert port.field == "service.spec.ports[peer].port" and (port.before, port.during) == (
        7000,
        9999,
    )

    # Not healed: each fault seen and still there at the end of the window.
    for name in KEPT:
        trial = trials[name]
        assert trial.status == "not-healed", (name, trial.error)
        assert trial.evidence.fault_seen is not None, name
    config = trials["configmap-data-change"].evidence
    assert config.field == "configmap.data" and config.during == {"app.properties": "chaos"}
    assert any(m.startswith("configmap.data") for m in config.mismatches_at_end)
    binding = trials["rbac-binding-delete"].evidence
    assert binding.target == "rolebinding" and binding.during == "absent"
    assert "rolebinding: missing" in binding.mismatches_at_end
    secret = trials["secret-data-change"].evidence
    # The Secret's values are only ever hashes, in the evidence as in the messages.
    assert all(str(v).startswith("sha256:") for v in (secret.during or {}).values())
    assert any(m.startswith("secret.data") for m in secret.mismatches_at_end)

    # Skipped, not errors: the report says why.
    reason = "applies to a Deployment only (the app's is StatefulSet sapp-"
    assert {s.name for s in results.skipped or []} == set(DEPLOYMENT_ONLY)
    assert all(s.reason.startswith(reason) for s in results.skipped or [])
    report = runner.invoke(app, ["report", str(run_dir)])
    assert report.exit_code == 0, report.output
    assert "Skipped (not run against this app or cluster)" in report.output
    assert "deployment-paused: applies to a Deployment only" in report.output

    check = runner.invoke(
        app, ["check", str(run_dir), "--policy", str(_policy(tmp_path)), "--verbose"]
    )
    assert check.exit_code == 0, check.output
    # Every trial's cell judged by the kind it acted on, none left uncovered.
    for name in (*HEALED, *KEPT):
        assert f"helm/{name}: expected" in check.output, (name, check.output)

    # No Secret value (the chart's token, the injected one) in any file the run wrote.
    secrets = [TOKEN, base64.b64encode(TOKEN.encode()).decode(), "Y2hhb3M="]
    for path in run_dir.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert not [s for s in secrets if s in text], path


def test_faults_on_what_the_chart_does_not_render_are_skipped_with_the_reason(
    tmp_path: Path,
) -> None:
    # The chart's container has no probes: removing one makes no sense for it (changing one
    # adds it: compare.chaos.choices).
    target = load_target(_target(tmp_path))
    workload = workload_of(render_target(target, target.chart_arm("helm"), "ns"))
    names = ["probe-change", "probe-remove", "image-change", "deployment-paused"]
    request = RunRequest(
        approaches=("helm",),
        experiments=tuple(load_experiments(names)),
        app=App(target, chart_workload=workload),
        output_dir=tmp_path,
    )
    kept, skipped = runnable(request, embedded=True)
    assert [s.name for s in kept.experiments] == ["probe-change", "image-change"]
    container = "statefulset.spec.template.spec.containers[server]"
    assert skipped == {
        "probe-remove": f"needs {container}.livenessProbe (the app's manifest has none to change)",
        "deployment-paused": (
            "applies to a Deployment only (the app's is StatefulSet sapp-stateful-app)"
        ),
    }
