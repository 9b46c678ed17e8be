"""`--target FILE` whose operator arm is the toolkit's own operator (`install: {toolkit:
true}`), on the real API server: the WebApps deployed, held to the built-in chart's rendering of
each (the one definition of desired for a WebApp, no baseline), judged by `compare status`,
removed - and the shared operator left running and installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import desired_objects, get, load_target
from compare.approaches.operator import REASONS
from compare.approaches.operator.baseline import baseline_name
from compare.approaches.operator.controllers import operator_status
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.webapp import parse_webapp

runner = CliRunner()
pytestmark = pytest.mark.cluster

SHOP: dict[str, Any] = {
    "apiVersion": "example.com/v1",
    "kind": "WebApp",
    "metadata": {"name": "shop"},
    "spec": {"replicas": 3, "image": "shop:v2", "port": 9090},
}


def _target(folder: Path, namespace: str) -> Path:
    (folder / "shop.yaml").write_text(yaml.safe_dump(SHOP))
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "shop",
        "namespace": namespace,
        "operator": {"install": {"toolkit": True}, "resources": ["shop.yaml"]},
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_a_toolkit_operator_target_is_held_to_the_reference_rendering(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    path = _target(tmp_path, namespace)
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
    deployed = runner.invoke(app, ["deploy", "operator", "--target", str(path), *kubeconfig])
    assert deployed.exit_code == 0, deployed.output
    assert (
        f"WebApp shop (replicas 3, image shop:v2) in namespace {namespace}: Available, desired"
        " state holds"
    ) in deployed.output
    assert "objects: Deployment, Service" in deployed.output
    assert "desired:   the built-in chart's rendering" in deployed.output
    # No baseline: the desired state is the reference rendering, not what the operator made.
    secrets = client.CoreV1Api(api).list_namespaced_secret(namespace).items
    assert baseline_name("shop") not in [s.metadata.name for s in secrets]

    # The same desired objects as the built-in app's operator arm for that WebApp.
    target, operator = load_target(path), get("operator")
    desired = operator.target_desired(cluster, api, target, namespace)
    builtin = desired_objects(api, operator.name, parse_webapp(SHOP), namespace)
    assert [item.defaulted for item in desired.items] == [item.defaulted for item in builtin.items]
    assert sorted((item.kind, item.name) for item in desired.items) == [
        ("Deployment", "shop"),
        ("Service", "shop"),
    ]
    # Events on the WebApp time detection, with the toolkit operator's reasons.
    detector = operator.detector(target)
    assert detector is not None and detector.custom == ()
    assert detector.kinds == {"WebApp": REASONS}

    status = runner.invoke(app, ["status", "--target", str(path), *kubeconfig])
    assert status.exit_code == 0, status.output
    row = next(line for line in status.stdout.splitlines() if line.startswith("operator"))
    assert row.split()[:5] == ["operator", "shop", namespace, "3/3", "shop:v2"]
    assert row.rstrip().endswith(" holds"), row

    removed = runner.invoke(app, ["undeploy", "operator", "--target", str(path), *kubeconfig])
    assert removed.exit_code == 0, removed.output
    assert f"WebApp shop removed from namespace {namespace}" in removed.output
    # The toolkit's operator is shared: never removed by a target's undeploy.
    assert "operator left as it is (the toolkit's own" in removed.output
    running = operator_status(cluster)
    assert running is not None and running.running
    crd = client.ApiextensionsV1Api(api).read_custom_resource_definition("webapps.example.com")
    assert crd.metadata.name == "webapps.example.com"
    webapps = client.CustomObjectsApi(api).list_namespaced_custom_object(
        "example.com", "v1", namespace, "webapps"
    )
    assert webapps["items"] == []
