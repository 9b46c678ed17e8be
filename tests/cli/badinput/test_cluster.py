"""Bad inputs against a real cluster: the cluster is left exactly as before.

Before and after each case: the namespaces, the Helm releases (any status), the CRDs, the
WebApps and whether a local operator runs. The first cases are refused by the pre-flight (the
model, the CRD's rules, the namespace name: nothing is installed); the last one passes every
local check and is refused by the API server during `helm install` — the deploy then rolls
back the release and the namespace it created.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches.operator.controllers import install_operator, operator_status, stop_operator
from compare.cli import app
from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.deploy.charts import list_releases
from tests.cli.badinput.cases import VALID_APP
from tests.conftest import TEST_CLUSTER

runner = CliRunner()


def cluster_state(cluster: ClusterTarget, api: client.ApiClient) -> dict[str, Any]:
    # What other tests leave behind in namespaces being deleted disappears on its own: only
    # live namespaces and their contents are compared.
    namespaces = sorted(
        ns.metadata.name
        for ns in client.CoreV1Api(api).list_namespace().items
        if ns.status.phase != "Terminating"
    )
    crds = sorted(
        c.metadata.name
        for c in client.ApiextensionsV1Api(api).list_custom_resource_definition().items
    )
    webapps: list[str] = []
    if "webapps.example.com" in crds:
        body = client.CustomObjectsApi(api).list_cluster_custom_object(
            "example.com", "v1", "webapps"
        )
        webapps = sorted(
            f"{w['metadata']['namespace']}/{w['metadata']['name']}"
            for w in body["items"]
            if w["metadata"]["namespace"] in namespaces
        )
    releases = sorted(
        f"{r.namespace}/{r.release}:{r.status}"
        for r in list_releases(cluster)
        if r.namespace in namespaces
    )
    status = operator_status(cluster)
    return {
        "namespaces": namespaces,
        "crds": crds,
        "webapps": webapps,
        "releases": releases,
        "operator": status is not None and status.running,
    }


def _app(tmp_path: Path, **spec: Any) -> str:
    doc = {**VALID_APP, "spec": {**VALID_APP["spec"], **spec}}
    path = tmp_path / "app.yaml"
    path.write_text(yaml.safe_dump(doc))
    return str(path)


OVER_LIMIT = {"requests": {"cpu": "500m"}, "limits": {"cpu": "250m"}}
CASES = [
    ("operator-bad-namespace", ["deploy", "operator", "-n", "Bad_NS"], {}, "namespace 'Bad_NS'"),
    (
        "operator-request-over-limit",
        ["deploy", "operator", "-n", "bad-limits"],
        {"resources": OVER_LIMIT},
        "resources.limits.cpu must be >= resources.requests.cpu",
    ),
    (
        "helm-request-over-limit",
        ["deploy", "helm", "-n", "bad-limits"],
        {"resources": OVER_LIMIT},
        "resources.limits.cpu must be >= resources.requests.cpu",
    ),
    (
        "operator-webhook-host",
        ["deploy", "operator", "-n", "bad-host", "--webhook-host", "bad host!"],
        {},
        "--webhook-host 'bad host!'",
    ),
    ("run-heal-window", ["run", "-e", "pod-delete-one", "--heal-window", "inf"], {}, "inf"),
]


@pytest.mark.parametrize(
    ("args", "spec", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refused_before_the_cluster_is_touched(
    cluster: ClusterTarget,
    api: client.ApiClient,
    tmp_path: Path,
    args: list[str],
    spec: dict[str, Any],
    expected: str,
) -> None:
    before = cluster_state(cluster, api)
    kube = ["--kubeconfig", str(cluster.kubeconfig)]
    result = runner.invoke(app, [*args, "--app", _app(tmp_path, **spec), *kube])
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and expected in lines[0], result.stderr
    assert "Traceback" not in result.output
    assert cluster_state(cluster, api) == before


def test_a_release_the_api_server_refuses_is_rolled_back(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    # The chart's schema allows any annotation key; the API server refuses this one, so
    # `helm install` fails after creating the namespace (and a failed release).
    values = tmp_path / "values.yaml"
    values.write_text(yaml.safe_dump({"podAnnotations": {"bad key!": "x"}}))
    before = cluster_state(cluster, api)
    namespace = "bad-annotation"
    assert namespace not in before["namespaces"]
    result = runner.invoke(
        app,
        [
            *("deploy", "helm", "--app", _app(tmp_path), "-f", str(values)),
            *("-n", namespace, "--timeout", "30", "--kubeconfig", str(cluster.kubeconfig)),
        ],
    )
    assert result.exit_code == 1, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: helm upgrade --install shop (namespace bad-annotation)")
    assert f"rolled back: removed what this deploy created and namespace {namespace}" in lines[0]
    assert "Traceback" not in result.output
    assert cluster_state(cluster, api) == before


def test_the_embedded_clusters_keys_are_private(cluster: ClusterTarget) -> None:
    embedded = EmbeddedCluster(TEST_CLUSTER)
    embedded.up()  # the session's cluster: already running, `up` only reports it
    keys = sorted(embedded.cluster_dir.glob("pki/*.key"))
    assert {key.name for key in keys} >= {"ca.key", "admin.key"}
    for path in [*keys, embedded.kubeconfig]:
        assert path.stat().st_mode & 0o777 == 0o600, path


def test_the_operator_does_not_inherit_the_callers_kubeconfig(
    cluster: ClusterTarget, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    running = operator_status(cluster)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "admin-kubeconfig"))
    handle = install_operator(cluster)
    try:
        assert handle.pid is not None
        environ = Path(f"/proc/{handle.pid}/environ").read_bytes().split(b"\0")
        names = {entry.split(b"=", 1)[0] for entry in environ if entry}
        assert b"KUBECONFIG" not in names and b"PATH" in names
    finally:
        if running is None or not running.running:
            stop_operator(cluster)
