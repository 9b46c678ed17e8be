"""A chart whose fail-closed admission webhook is served by its own pods, on the embedded
cluster (no pod runs code): found before anything is installed, and left out of the helm
arm's install and desired state with `dropUnservedWebhooks` (compare.deploy.post_render)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client

from compare.approaches import load_target
from compare.approaches.flux.arm import deploy_target_flux, undeploy_target_flux
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import deploy_target, install_target, uninstall_target
from compare.deploy.code_pods import REMEDY
from compare.run.preflight import code_findings

pytestmark = pytest.mark.cluster

CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "fail-closed-webhook"


def _target(folder: Path, *, drop: bool) -> Path:
    arm = {"chart": {"path": str(CHART)}, "release": "guard", "dropUnservedWebhooks": drop}
    data = {"apiVersion": "compare.example.com/v1alpha1", "kind": "Target", "name": "guard"}
    path = folder / f"guard-{drop}.yaml"
    path.write_text(yaml.safe_dump({**data, "helm": arm}))
    return path


def _config_map(core: client.CoreV1Api, namespace: str, name: str) -> None:
    body = client.V1ConfigMap(metadata=client.V1ObjectMeta(name=name), data={"a": "b"})
    core.create_namespaced_config_map(namespace, body)


def test_the_switch_leaves_the_fail_closed_webhook_out_of_install_and_desired_state(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    plain = load_target(_target(tmp_path, drop=False))
    dropping = load_target(_target(tmp_path, drop=True))
    webhook = f"ValidatingWebhookConfiguration guard-{namespace}"
    # Said before anything is installed, one line, with the switch that stands in for it.
    assert code_findings(plain, ["helm"], namespace) == [
        f"preflight: {webhook}: webhook configmaps.guard.example.com is served by Service guard,"
        " which selects the chart's Deployment guard (fail-closed: it refuses every request it"
        f" matches): {REMEDY}, or dropUnservedWebhooks: true in the helm arm"
    ]
    assert code_findings(dropping, ["helm"], namespace) == [
        f"preflight: {webhook}: left out of the helm arm's install and desired state"
        " (dropUnservedWebhooks: its webhooks are never called)"
    ]
    core = client.CoreV1Api(api)
    try:
        release, desired = deploy_target(
            cluster, dropping, dropping.chart_arm("helm"), namespace, timeout=60
        )
        assert sorted(item.kind for item in desired.items) == ["Deployment", "Service"]
        assert release.objects is not None
        assert sorted(o["kind"] for o in release.objects) == ["Deployment", "Service"]
        _config_map(core, namespace, "admitted")  # nothing calls the webhook
        # Without the switch the chart's webhook is installed and refuses what it matches.
        install_target(cluster, plain, plain.chart_arm("helm"), namespace, timeout=60)
        with pytest.raises(client.ApiException) as refused:
            _config_map(core, namespace, "refused")
        assert "configmaps.guard.example.com" in str(refused.value.body)
    finally:
        uninstall_target(cluster, plain.chart_arm("helm"), namespace, timeout=60)


def test_flux_leaves_it_out_through_helm_controllers_post_renderer(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    path = _target(tmp_path, drop=True)
    data = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**data, "flux": data.pop("helm")}))
    target = load_target(path)
    install = target.chart_arm("flux")
    try:
        desired = deploy_target_flux(cluster, target, install, namespace, timeout=90)
        assert sorted(item.kind for item in desired.items) == ["Deployment", "Service"]
        admission = client.AdmissionregistrationV1Api(api)
        names = [w.metadata.name for w in admission.list_validating_webhook_configuration().items]
        assert f"guard-{namespace}" not in names
        _config_map(client.CoreV1Api(api), namespace, "admitted")
    finally:
        undeploy_target_flux(cluster, install, namespace, timeout=60)
