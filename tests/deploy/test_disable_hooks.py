"""A chart whose install waits on a hook that must run code, on the embedded cluster (no pod
runs code: a hook Pod never ends): found before anything is installed, and installed without
its hooks by the helm arm (`helm --no-hooks`) and the flux arm (the HelmRelease's
`disableHooks`) with `disableHooks`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes import client

from compare.approaches import load_target
from compare.approaches.flux.arm import deploy_target_flux, undeploy_target_flux
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import deploy_target, uninstall_target
from compare.deploy.code_pods import REMEDY
from compare.run.preflight import code_findings

pytestmark = pytest.mark.cluster

CHART = Path(__file__).parents[1] / "fixtures" / "charts" / "hook-pod"
HOOK_LABEL = "hook-pod.example.com/hook"


def _target(folder: Path, arm: str, *, disable: bool) -> Path:
    spec = {"chart": {"path": str(CHART)}, "release": "hooked", "disableHooks": disable}
    data = {"apiVersion": "compare.example.com/v1alpha1", "kind": "Target", "name": "hooked"}
    path = folder / f"hooked-{arm}-{disable}.yaml"
    path.write_text(yaml.safe_dump({**data, arm: spec}))
    return path


def _hook_objects(api: client.ApiClient, namespace: str) -> list[str]:
    """The chart's hook Pods and Jobs in the namespace (a Job's pods carry the label too)."""
    pods = client.CoreV1Api(api).list_namespaced_pod(namespace, label_selector=HOOK_LABEL)
    jobs = client.BatchV1Api(api).list_namespaced_job(namespace, label_selector=HOOK_LABEL)
    return [f"Pod {p.metadata.name}" for p in pods.items] + [
        f"Job {j.metadata.name}" for j in jobs.items
    ]


def test_the_helm_arm_installs_the_chart_without_its_hooks(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    plain = load_target(_target(tmp_path, "helm", disable=False))
    skipping = load_target(_target(tmp_path, "helm", disable=True))
    # Said before anything is installed, one line each, with the switch that stands in.
    switch = "or disableHooks: true in the helm arm"
    assert code_findings(plain, ["helm"], namespace) == [
        f"preflight: Pod hooked-migrate: a Helm pre-install, pre-upgrade hook: {REMEDY}, {switch}",
        f"preflight: Job hooked-seed: a Helm post-install hook: {REMEDY}, {switch}",
    ]
    never = "never run by the helm arm (disableHooks: the chart's hooks are not installed)"
    assert code_findings(skipping, ["helm"], namespace) == [
        f"preflight: Pod hooked-migrate: {never}",
        f"preflight: Job hooked-seed: {never}",
    ]
    install = skipping.chart_arm("helm")
    try:
        # Helm would wait for the hook Pod until the timeout: without it, the install holds.
        release, desired = deploy_target(cluster, skipping, install, namespace, timeout=60)
        assert sorted(item.kind for item in desired.items) == ["Deployment", "Service"]
        assert _hook_objects(api, namespace) == []
        # An upgrade runs no hook either.
        release, _ = deploy_target(cluster, skipping, install, namespace, timeout=60)
        assert release.revision == 2
        assert _hook_objects(api, namespace) == []
    finally:
        uninstall_target(cluster, install, namespace, timeout=60)


def test_the_flux_arm_installs_it_through_the_helm_releases_disable_hooks(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    target = load_target(_target(tmp_path, "flux", disable=True))
    install = target.chart_arm("flux")
    try:
        desired = deploy_target_flux(cluster, target, install, namespace, timeout=90)
        assert sorted(item.kind for item in desired.items) == ["Deployment", "Service"]
        assert _hook_objects(api, namespace) == []
    finally:
        undeploy_target_flux(cluster, install, namespace, timeout=60)
