"""`--target FILE`, operator arm, on the real API server: `compare deploy operator`, `compare
status` and `compare undeploy operator` with the WebApp operator (already installed: the
toolkit's own local process) under a non-default custom resource, and bad input - a custom
resource of a kind nobody serves, an operator (kustomize or chart) that never gets ready, one
whose manager runs in pods on the embedded cluster - as one line, with the cluster left as it
was."""

from __future__ import annotations

import base64
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import load_target
from compare.approaches.operator.arm import install_documents
from compare.approaches.operator.baseline import baseline_name
from compare.approaches.operator.incluster import check_runs_here
from compare.cli import app
from compare.cluster import ClusterTarget, is_local
from compare.deploy.charts import get_release
from tests.helpers import assert_stopped_in_preflight

from .operator_targets import (
    ENV,
    namespace_names,
    one_error_line,
    shop_target,
    stuck_target,
    webapp_operator,
)

__all__ = ["webapp_operator"]  # the fixture, used by name below

runner = CliRunner()
pytestmark = pytest.mark.cluster


def _kubeconfig(cluster: ClusterTarget) -> list[str]:
    return ["--kubeconfig", str(cluster.kubeconfig)]


def _baseline(api: client.ApiClient, namespace: str) -> dict[str, Any]:
    secret = client.CoreV1Api(api).read_namespaced_secret(baseline_name("shop"), namespace)
    data: dict[str, Any] = json.loads(base64.b64decode(secret.data["baseline.json"]))
    return data


def test_an_operator_target_deploys_takes_its_baseline_and_goes(
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    tmp_path: Path,
    webapp_operator: None,
) -> None:
    path = shop_target(tmp_path, namespace=namespace)
    deployed = runner.invoke(
        app,
        ["deploy", "operator", "--target", str(path), "--timeout", "120", *_kubeconfig(cluster)],
    )
    assert deployed.exit_code == 0, deployed.output
    assert (
        f"WebApp shop (ready by condition Available) in namespace {namespace}: baseline taken"
    ) in deployed.output
    assert "2 owned objects: Deployment, Service" in deployed.output
    assert "operator:  already installed (checked)" in deployed.output
    # Every field of the owned objects is the operator's (or Kubernetes' own): nothing foreign.
    assert "warning" not in deployed.output

    # The baseline: what the WebApp owns, as the operator made it from the non-default spec.
    stored = _baseline(api, namespace)
    assert [(o["kind"], o["metadata"]["name"]) for o in stored["objects"]] == [
        ("Deployment", "shop"),
        ("Service", "shop"),
    ]
    live_cr = client.CustomObjectsApi(api).get_namespaced_custom_object(
        "example.com", "v1", namespace, "webapps", "shop"
    )
    assert stored["resources"][0]["uid"] == live_cr["metadata"]["uid"]
    deployment = stored["objects"][0]
    assert deployment["spec"]["replicas"] == 5
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "shop:v2"
    assert container["env"] == ENV
    assert container["resources"] == {
        "requests": {"cpu": "100m", "memory": "96Mi"},
        "limits": {"memory": "192Mi"},
    }
    # Identity, status and the controller's own annotations are no desired state.
    assert set(deployment["metadata"]) <= {"name", "labels", "annotations"}
    assert "status" not in deployment
    annotations = deployment["metadata"].get("annotations") or {}
    assert "deployment.kubernetes.io/revision" not in annotations

    status = runner.invoke(app, ["status", "--target", str(path), *_kubeconfig(cluster)])
    assert status.exit_code == 0, status.output
    row = next(line for line in status.stdout.splitlines() if "WebApp/shop" in line)
    assert row.split()[:5] == ["operator", "WebApp/shop", namespace, "5/5", "shop:v2"]
    assert row.rstrip().endswith(" holds"), row

    # Deploying again over it is an update: same baseline, nothing rolled back.
    again = runner.invoke(app, ["deploy", "operator", "--target", str(path), *_kubeconfig(cluster)])
    assert again.exit_code == 0, again.output
    assert _baseline(api, namespace)["objects"] == stored["objects"]

    removed = runner.invoke(
        app, ["undeploy", "operator", "--target", str(path), *_kubeconfig(cluster)]
    )
    assert removed.exit_code == 0, removed.output
    assert f"WebApp shop removed from namespace {namespace}" in removed.output
    assert "operator left as it is (alreadyInstalled" in removed.output
    apps = client.AppsV1Api(api)
    assert [d.metadata.name for d in apps.list_namespaced_deployment(namespace).items] == []
    secrets = client.CoreV1Api(api).list_namespaced_secret(namespace).items
    assert baseline_name("shop") not in [s.metadata.name for s in secrets]
    gone = runner.invoke(app, ["status", "--target", str(path), *_kubeconfig(cluster)])
    assert gone.exit_code == 0, gone.output
    assert "WebApp shop: not deployed" in gone.stdout


def test_a_custom_resource_of_a_kind_nobody_serves_is_one_line_before_anything(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    fresh = f"t-unserved-{uuid.uuid4().hex[:6]}"
    path = shop_target(tmp_path, namespace=fresh)
    (tmp_path / "shop.yaml").write_text(
        "apiVersion: nowhere.example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec: {}\n"
    )
    run = ["run", "-a", "operator", "-e", "pod-delete-one", "--output", str(tmp_path / "out")]
    for args in (["deploy", "operator"], run):
        result = runner.invoke(app, [*args, "--target", str(path), *_kubeconfig(cluster)])
        assert one_error_line(result, 2) == (
            f"{path}: operator.resources: Widget w: no API serves Widget in"
            " nowhere.example.com/v1 (no established CRD defines it, and the install does not)"
        )
    assert fresh not in namespace_names(api)


@pytest.mark.parametrize("form", ["kustomize", "chart"])
def test_an_operator_that_never_gets_ready_is_one_line_and_the_cluster_is_left_as_it_was(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path, form: str
) -> None:
    fresh = f"t-stuck-{uuid.uuid4().hex[:6]}"
    path = stuck_target(tmp_path, fresh, form=form)
    crds = client.ApiextensionsV1Api(api)
    result = runner.invoke(
        app, ["deploy", "operator", "--target", str(path), "--timeout", "8", *_kubeconfig(cluster)]
    )
    line = one_error_line(result, 1)
    assert line.startswith("not ready within ")
    assert f"Gadget {fresh}/one: no Ready condition yet" in line
    assert line.endswith(f"; rolled back: removed what this deploy created and namespace {fresh}")
    # The install (its CRD) and the namespace are gone again.
    names = [crd.metadata.name for crd in crds.list_custom_resource_definition().items]
    assert "gadgets.stuck.example.com" not in names
    assert fresh not in namespace_names(api)
    if form == "chart":
        assert get_release(cluster, fresh, "gadget-operator") is None


@pytest.mark.parametrize("form", ["kustomize", "chart"])
def test_an_operator_whose_manager_runs_in_pods_is_refused_on_the_embedded_cluster_at_once(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path, form: str
) -> None:
    # Pods run no code on the embedded cluster: the install's manager Deployment would never
    # reconcile. Said before anything is created, by `deploy` and by `run`, in seconds.
    fresh = f"t-inpods-{uuid.uuid4().hex[:6]}"
    path = stuck_target(tmp_path, fresh, form=form, manager=True)
    if not is_local(cluster):
        # A cluster given by --kubeconfig (not the embedded one) runs pods: nothing refused.
        target = load_target(path)
        operator = target.operator_arm("operator")
        documents = install_documents(target, operator, fresh)
        check_runs_here(cluster, target, operator, documents)
        return
    out = tmp_path / "out"
    run = ["run", "-a", "operator", "-e", "pod-delete-one", "--output", str(out)]
    for args in (["deploy", "operator"], run):
        started = time.monotonic()
        result = runner.invoke(app, [*args, "--target", str(path), *_kubeconfig(cluster)])
        assert time.monotonic() - started < 30
        refusal = (
            f"{path}: operator.install.{form}: the operator (Deployment gadget-operator) runs its"
            " manager in pods, and pods run no code on the embedded cluster: use"
            " operator.install.process (run it as a local command) or a real cluster through"
            " --kubeconfig"
        )
        assert one_error_line(result, 2) == refusal
    assert fresh not in namespace_names(api)
    assert_stopped_in_preflight(out, refusal)
    names = [
        c.metadata.name
        for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    ]
    assert "gadgets.stuck.example.com" not in names


def test_ready_when_its_children_are(
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    tmp_path: Path,
    webapp_operator: None,
) -> None:
    # `ready: {children: true}`: no condition read, every owned workload ready (5/5 pods).
    path = shop_target(tmp_path, namespace=namespace)
    data = yaml.safe_load(path.read_text())
    data["operator"]["ready"] = {"children": True}
    path.write_text(yaml.safe_dump(data))
    deployed = runner.invoke(
        app, ["deploy", "operator", "--target", str(path), *_kubeconfig(cluster)]
    )
    assert deployed.exit_code == 0, deployed.output
    assert f"WebApp shop (ready by children) in namespace {namespace}: baseline taken" in (
        deployed.output
    )
    deployment = client.AppsV1Api(api).read_namespaced_deployment("shop", namespace)
    assert deployment.status.ready_replicas == 5
    removed = runner.invoke(
        app, ["undeploy", "operator", "--target", str(path), *_kubeconfig(cluster)]
    )
    assert removed.exit_code == 0, removed.output


def test_a_run_whose_operator_never_gets_ready_is_one_line_and_runs_no_trial(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    # The run's preflight deploys the custom resources once: within --deploy-timeout, or the
    # run is one line, no trial starts, and what the preflight installed is removed again.
    fresh = f"t-stuck-run-{uuid.uuid4().hex[:6]}"
    path = stuck_target(tmp_path, fresh)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(path), "-a", "operator", "-e", "pod-delete-one"),
            *("--deploy-timeout", "6", "--output", str(out), *_kubeconfig(cluster)),
        ],
    )
    line = one_error_line(result, 1)
    assert line.startswith("preflight of the operator arm: not ready within ")
    assert ": no Ready condition yet; removed what it installed" in line
    assert_stopped_in_preflight(out, line)  # nothing ran: the results say why
    names = [
        c.metadata.name
        for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    ]
    assert "gadgets.stuck.example.com" not in names
    assert fresh not in namespace_names(api)
