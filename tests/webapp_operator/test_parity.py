"""Parity: for the same WebApp, the Helm chart and the operator build the same workload.

The chart is rendered by the real helm binary (`helm template`, no cluster) from
`to_helm_values`; the operator's objects come from its pure builders. They must agree on every
field both approaches own, so a difference measured later is about self-healing, not shape.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from compare.cluster import tool_path
from compare.paths import CHARTS_DIR
from compare.webapp import WebApp, load_webapp, to_helm_values
from tests.helpers import make_webapp
from webapp_operator.builders import build_deployment, build_service, owner_reference

CHART = CHARTS_DIR / "webapp"
OWNER = owner_reference({"metadata": {"name": "x", "uid": "u"}})


def _helm_objects(webapp: WebApp, tmp_path: Path) -> dict[str, dict[str, Any]]:
    values = tmp_path / "values.json"
    values.write_text(json.dumps(to_helm_values(webapp)))
    result = subprocess.run(
        [tool_path("helm"), "template", webapp.name, str(CHART), "-f", str(values)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    objects = [doc for doc in yaml.safe_load_all(result.stdout) if doc]
    return {
        obj["kind"]: obj
        for obj in objects
        if "helm.sh/hook" not in (obj["metadata"].get("annotations") or {})
    }


def _container(deployment: dict[str, Any]) -> dict[str, Any]:
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    found: dict[str, Any] = container
    return found


WEBAPPS = [
    pytest.param(load_webapp(), id="example"),
    pytest.param(
        make_webapp(
            "parity",
            replicas=5,
            image="registry.local:5000/team/app:v2",
            port=9090,
            env=[{"name": "A", "value": "1"}, {"name": "EMPTY"}, {"name": "B", "value": "x y"}],
            resources={"requests": {"cpu": "100m"}, "limits": {"cpu": "1", "memory": "256Mi"}},
        ),
        id="full",
    ),
    pytest.param(make_webapp("zero", replicas=0, image="app:v1"), id="scaled-to-zero"),
]


@pytest.mark.parametrize("webapp", WEBAPPS)
def test_helm_and_operator_build_the_same_workload(webapp: WebApp, tmp_path: Path) -> None:
    helm = _helm_objects(webapp, tmp_path)
    assert set(helm) == {"Deployment", "Service"}
    ours = {
        "Deployment": build_deployment(webapp, "ns", OWNER),
        "Service": build_service(webapp, "ns", OWNER),
    }
    for kind in ("Deployment", "Service"):
        assert helm[kind]["metadata"]["name"] == ours[kind]["metadata"]["name"] == webapp.name

    h_dep, o_dep = helm["Deployment"], ours["Deployment"]
    assert h_dep["spec"]["replicas"] == o_dep["spec"]["replicas"] == webapp.spec.replicas
    assert h_dep["spec"]["selector"] == o_dep["spec"]["selector"]
    h_labels = h_dep["spec"]["template"]["metadata"]["labels"]
    o_labels = o_dep["spec"]["template"]["metadata"]["labels"]
    for key in (
        "app.kubernetes.io/name",
        "app.kubernetes.io/instance",
        "app.kubernetes.io/component",
    ):
        assert h_labels[key] == o_labels[key], key

    h_pod, o_pod = h_dep["spec"]["template"]["spec"], o_dep["spec"]["template"]["spec"]
    for key in ("securityContext", "automountServiceAccountToken", "volumes"):
        assert h_pod.get(key) == o_pod.get(key), key
    h_c, o_c = _container(h_dep), _container(o_dep)
    assert h_c["name"] == o_c["name"] == "webapp"
    assert h_c["image"] == o_c["image"] == webapp.spec.image
    assert h_c["ports"] == o_c["ports"]
    # The chart writes `value: ""` where the operator omits it; the API server stores both alike.
    h_env = [(e["name"], e.get("value", "")) for e in h_c.get("env") or []]
    o_env = [(e["name"], e.get("value", "")) for e in o_c.get("env") or []]
    assert h_env == o_env == [(v.name, v.value) for v in webapp.spec.env]
    for key in ("securityContext", "resources", "volumeMounts", "imagePullPolicy"):
        assert h_c.get(key) == o_c.get(key), key
    for probe in ("readinessProbe", "livenessProbe"):
        # Zero-valued fields (initialDelaySeconds: 0) are dropped by the API server.
        h_probe = {k: v for k, v in h_c[probe].items() if v != 0}
        assert h_probe == o_c[probe], probe

    h_svc, o_svc = helm["Service"]["spec"], ours["Service"]["spec"]
    assert h_svc["type"] == o_svc["type"] == "ClusterIP"
    assert h_svc["selector"] == o_svc["selector"]
    assert h_svc["ports"] == o_svc["ports"]
