"""Target files for the operator arm: the WebApp operator (the toolkit's own local process,
so `alreadyInstalled: true`) under a non-default custom resource, and an operator installed by
kustomize or as a chart that never gets ready (its install brings the CRD and nothing that
reconciles; with its manager Deployment, the embedded cluster refuses it: pods run no code
there)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from compare.approaches.operator.controllers import install_operator, operator_status, stop_operator
from compare.cluster import ClusterTarget
from compare.paths import CHARTS_DIR, EXAMPLES_DIR
from compare.webapp import API_GROUP, API_VERSION, PLURAL
from tests.helpers import eventually

EXAMPLE = EXAMPLES_DIR / "target-shop.yaml"
# The example's non-default spec: five replicas, several env vars, requests and limits.
ENV = [
    {"name": "LOG_LEVEL", "value": "debug"},
    {"name": "FEATURE_FLAGS", "value": "checkout,search"},
    {"name": "REGION", "value": "eu-west-1"},
]
RESOURCES = {"requests": {"cpu": "100m", "memory": "96Mi"}, "limits": {"memory": "192Mi"}}


def shop_target(folder: Path, *, namespace: str | None = None, helm: bool = False) -> Path:
    """examples/target-shop.yaml in `folder` (the test's namespace; its helm arm only with
    `helm`), its custom resource moved to a file of its own as a target may name it."""
    data: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text())
    data.pop("namespace")
    if namespace is not None:
        data["namespace"] = namespace
    if helm:
        data["helm"]["chart"]["path"] = str(CHARTS_DIR / "webapp")
    else:
        del data["helm"]
    (folder / "shop.yaml").write_text(yaml.safe_dump(data["operator"]["resources"][0]))
    data["operator"]["resources"] = ["shop.yaml"]
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.stuck.example.com"},
    "spec": {
        "group": "stuck.example.com",
        "scope": "Namespaced",
        "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": True,
                    }
                },
            }
        ],
    },
}
MANAGER = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "gadget-operator"},
    "spec": {
        "replicas": 1,
        "selector": {"matchLabels": {"app": "gadget-operator"}},
        "template": {
            "metadata": {"labels": {"app": "gadget-operator"}},
            "spec": {"containers": [{"name": "manager", "image": "gadget-operator:v1"}]},
        },
    },
}


def stuck_target(
    folder: Path, namespace: str, *, form: str = "kustomize", manager: bool = False
) -> Path:
    """An operator installed by kustomize or as a chart - its CRD, and its manager Deployment
    with `manager` - whose Gadget never gets its Ready condition: nothing reconciles it."""
    if form == "kustomize":
        directory = folder / "install"
        directory.mkdir()
        listed = ["crd.yaml", *(["manager.yaml"] if manager else [])]
        (directory / "kustomization.yaml").write_text(yaml.safe_dump({"resources": listed}))
        install: dict[str, Any] = {"kustomize": "install"}
    else:
        directory = folder / "chart" / "templates"
        directory.mkdir(parents=True)
        (folder / "chart" / "Chart.yaml").write_text(
            "apiVersion: v2\nname: gadget-operator\nversion: 0.1.0\n"
        )
        install = {"chart": {"chart": {"path": "chart"}, "release": "gadget-operator"}}
    (directory / "crd.yaml").write_text(yaml.safe_dump(CRD))
    if manager:
        (directory / "manager.yaml").write_text(yaml.safe_dump(MANAGER))
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "gadget",
        "namespace": namespace,
        "operator": {
            "install": install,
            "resources": [
                {
                    "apiVersion": "stuck.example.com/v1",
                    "kind": "Gadget",
                    "metadata": {"name": "one"},
                    "spec": {"size": 3},
                }
            ],
            "ready": {"condition": "Ready"},
        },
    }
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture(scope="module")
def webapp_operator(cluster: ClusterTarget, api: client.ApiClient) -> Iterator[None]:
    """The toolkit's own operator, running: the target's `alreadyInstalled` operator. It
    outlives the tests' WebApps (their finalizer needs it), and is stopped again when these
    tests started it."""
    before = operator_status(cluster)
    install_operator(cluster)
    yield
    custom = client.CustomObjectsApi(api)

    def none_left() -> bool:
        items = custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)["items"]
        return not [i for i in items if i["metadata"]["namespace"].startswith(("t-", "cmp-"))]

    eventually(none_left, timeout=60, what="the tests' WebApps to be gone")
    if before is None or not before.running:
        stop_operator(cluster)


def one_error_line(result: Any, code: int) -> str:
    """A CLI result's one error line (without `error: `): exit `code`, no traceback."""
    assert result.exit_code == code, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    return str(lines[0]).removeprefix("error: ")


def namespace_names(api: client.ApiClient) -> set[str]:
    return {ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items}
