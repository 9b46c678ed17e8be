"""`--target FILE` on the CLI, Helm arm: `compare deploy helm`, `compare status` and `compare
undeploy helm` with your own chart. Every bad input is one line (exit 2) before the cluster is
touched; against the real API server a target's release deploys, holds, shows its drift in
`compare status` and goes away again."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches import load_target
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import uninstall_target
from compare.deploy.charts import get_release, release_objects
from compare.judge.kinds import kind
from compare.paths import CHARTS_DIR, EXAMPLES_DIR

runner = CliRunner()

# Never read: a command that reached the cluster would fail naming it instead.
NO_CLUSTER = ["--kubeconfig", "/nonexistent/kubeconfig"]
EXAMPLE = EXAMPLES_DIR / "target-operator-chart.yaml"


def _one_error_line(result: Any) -> str:
    assert result.exit_code == 2, result.output
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.output
    line: str = lines[0]
    assert line.startswith("error: ")
    return line.removeprefix("error: ")


def _failing_chart(folder: Path, message: str) -> Path:
    """A chart whose only template fails with `message` (a template expression)."""
    chart = folder / "broken"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: broken\nversion: 0.1.0\n")
    (chart / "templates" / "configmap.yaml").write_text(f"{{{{ fail {message} }}}}\n")
    return chart


def _target(folder: Path, chart: Path, *, namespace: str | None = None) -> Path:
    data: dict[str, Any] = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "broken",
        "helm": {"chart": {"path": str(chart)}},
    }
    if namespace is not None:
        data["namespace"] = namespace
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["deploy", "helm", "--app", "x.yaml"], "--target and --app are mutually exclusive"),
        (["deploy", "helm", "--release", "r"], "--target and --release are mutually exclusive"),
        (["deploy", "helm", "-f", "v.yaml"], "--target and --values are mutually exclusive"),
        (["undeploy", "helm", "--app", "x.yaml"], "--target and --app are mutually exclusive"),
        (["undeploy", "helm", "--release", "r"], "--target and --release are mutually exclusive"),
        (["status", "-A"], "--target and --all-namespaces are mutually exclusive"),
        (["deploy", "operator", "--app", "x.yaml"], "--target and --app are mutually exclusive"),
        (
            ["deploy", "operator", "--webhook-host", "h"],
            "--target and --webhook-host are mutually exclusive",
        ),
        (["undeploy", "operator", "--name", "n"], "--target and --name are mutually exclusive"),
    ],
)
def test_flags_the_target_file_decides_are_usage_errors(args: list[str], message: str) -> None:
    result = runner.invoke(app, [*args, "--target", str(EXAMPLE), *NO_CLUSTER])
    assert _one_error_line(result).startswith(message)


# The flux arm: tests/target/test_target_flux.py.
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["deploy", "operator"],
            f"{EXAMPLE}: operator: not given (this target has no operator key)",
        ),
        (
            ["undeploy", "operator"],
            f"{EXAMPLE}: operator: not given (this target has no operator key)",
        ),
    ],
)
def test_an_arm_the_target_lacks_is_one_line(args: list[str], message: str) -> None:
    # The operator arm deploys a target's operator key (tests/target/test_operator_target.py).
    result = runner.invoke(app, [*args, "--target", str(EXAMPLE), *NO_CLUSTER])
    assert _one_error_line(result) == message


@pytest.mark.parametrize(
    "args", [["deploy", "helm"], ["undeploy", "helm"], ["status"]], ids=lambda a: a[0]
)
def test_a_bad_target_file_is_one_line_before_the_cluster(tmp_path: Path, args: list[str]) -> None:
    path = tmp_path / "compare.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(EXAMPLE.read_text()), "colour": 1}))
    result = runner.invoke(app, [*args, "--target", str(path), *NO_CLUSTER])
    assert _one_error_line(result) == f"{path}: colour: unknown field"
    # A target without a helm key has nothing for the Helm commands to deploy.
    data = {
        "apiVersion": "compare.example.com/v1alpha1",
        "kind": "Target",
        "name": "app",
        "flux": {"chart": {"path": str(CHARTS_DIR / "webapp")}},
    }
    path.write_text(yaml.safe_dump(data))
    result = runner.invoke(app, [*args, "--target", str(path), *NO_CLUSTER])
    if args == ["status"]:
        # A flux-only target has its HelmRelease's row: status goes on to the cluster.
        assert _one_error_line(result) == "kubeconfig /nonexistent/kubeconfig: no such file"
    else:
        assert _one_error_line(result) == f"{path}: helm: not given (this target has no helm key)"


def test_a_chart_that_does_not_render_is_one_line_before_the_cluster(tmp_path: Path) -> None:
    path = _target(tmp_path, _failing_chart(tmp_path, '"no way"'))
    result = runner.invoke(app, ["deploy", "helm", "--target", str(path), *NO_CLUSTER])
    line = _one_error_line(result)
    assert line.startswith(f"{path}: helm: helm template broken failed: execution error at ")
    assert line.endswith(": no way")


@pytest.mark.parametrize(
    ("own", "option", "chosen"),
    [
        ("from-file", None, "from-file"),
        ("from-file", "from-option", "from-option"),
        (None, None, "webapp"),
    ],
)
def test_the_namespace_is_the_option_else_the_targets_else_the_default(
    tmp_path: Path, own: str | None, option: str | None, chosen: str
) -> None:
    # The chart fails naming the namespace it is rendered into.
    path = _target(tmp_path, _failing_chart(tmp_path, ".Release.Namespace"), namespace=own)
    given = [] if option is None else ["-n", option]
    result = runner.invoke(app, ["deploy", "helm", "--target", str(path), *given, *NO_CLUSTER])
    assert _one_error_line(result).endswith(f": {chosen}")


def _operator_chart_target(folder: Path, namespace: str, release: str) -> Path:
    """examples/target-operator-chart.yaml in the test's namespace, under its own release
    (its cluster-scoped objects are named after the release)."""
    data = yaml.safe_load(EXAMPLE.read_text())
    data["namespace"] = namespace
    helm = data["helm"]
    helm["chart"]["path"] = str(CHARTS_DIR / "webapp-operator")
    helm["release"] = release
    data["parts"]["workload"] = f"Deployment/{release}-webapp-operator"
    helm["values"]["watchNamespaces"] = [namespace]
    helm["values"]["webhook"]["failurePolicy"] = "Ignore"
    path = folder / "compare.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _exists(api: client.ApiClient, obj: dict[str, Any], namespace: str) -> bool:
    try:
        kind(obj["kind"]).read_call(api)(obj["metadata"]["name"], namespace)
    except client.ApiException as exc:
        if exc.status == 404:
            return False
        raise
    return True


@pytest.mark.cluster
def test_a_targets_release_deploys_holds_drifts_and_goes(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
    core = client.CoreV1Api(api)
    # A chart that does not render creates nothing: no namespace, no release.
    fresh = f"t-never-{uuid.uuid4().hex[:6]}"
    broken = _target(tmp_path, _failing_chart(tmp_path, '"no way"'), namespace=fresh)
    result = runner.invoke(app, ["deploy", "helm", "--target", str(broken), *kubeconfig])
    assert _one_error_line(result).endswith(": no way")
    assert fresh not in [ns.metadata.name for ns in core.list_namespace().items]

    release = f"wop-{uuid.uuid4().hex[:6]}"
    path = _operator_chart_target(tmp_path, namespace, release)
    install = load_target(path).chart_arm("helm")
    assert install is not None
    try:
        deployed = runner.invoke(
            app, ["deploy", "helm", "--target", str(path), "--timeout", "120", *kubeconfig]
        )
        assert deployed.exit_code == 0, deployed.output
        assert f"helm release {release} (revision 1, chart " in deployed.output
        assert f"in namespace {namespace}: desired state holds" in deployed.output

        status = runner.invoke(app, ["status", "--target", str(path), *kubeconfig])
        assert status.exit_code == 0, status.output
        rows = [line for line in status.stdout.splitlines() if line.startswith("helm ")]
        assert len(rows) == 2, status.stdout  # the heading and the release's row
        assert rows[1].split()[:3] == ["helm", release, namespace]
        assert rows[1].rstrip().endswith(" holds"), rows[1]

        # One rule of the release's Role, changed in the live cluster.
        leader_role = f"{release}-webapp-operator-leader-election"
        rbac = client.RbacAuthorizationV1Api(api)
        role = rbac.read_namespaced_role(leader_role, namespace)
        role.rules[0].verbs = [*role.rules[0].verbs, "deletecollection"]
        rbac.replace_namespaced_role(leader_role, namespace, role)
        status = runner.invoke(app, ["status", "--target", str(path), *kubeconfig])
        assert status.exit_code == 0, status.output
        assert f"drifted: role/{leader_role}.rules[0].verbs" in status.stdout, status.stdout
        assert " holds" not in status.stdout

        objects = release_objects(cluster, namespace, release) or []
        namespaced = [obj for obj in objects if kind(obj["kind"]).namespaced]
        assert {obj["kind"] for obj in namespaced} >= {"Role", "Secret", "Deployment"}
        removed = runner.invoke(app, ["undeploy", "helm", "--target", str(path), *kubeconfig])
        assert removed.exit_code == 0, removed.output
        assert f"helm release {release} removed from namespace {namespace}" in removed.output
        assert get_release(cluster, namespace, release) is None
        assert [o["metadata"]["name"] for o in namespaced if _exists(api, o, namespace)] == []
        again = runner.invoke(app, ["status", "--target", str(path), *kubeconfig])
        assert again.exit_code == 0, again.output
        assert f"helm release {release}: not deployed" in again.stdout
    finally:
        uninstall_target(cluster, install, namespace, timeout=60)
    # Its cluster-scoped objects went with the release.
    names = [r.metadata.name for r in client.RbacAuthorizationV1Api(api).list_cluster_role().items]
    assert not [name for name in names if name.startswith(release)]


STUCK = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: stuck
spec:
  replicas: 1
  selector:
    matchLabels: {app: stuck}
  template:
    metadata:
      labels: {app: stuck}
    spec:
      nodeSelector: {compare.example.com/no-such-node: "true"}
      containers:
        - name: app
          image: stuck:v1
"""


@pytest.mark.cluster
def test_a_target_deploy_that_fails_removes_what_it_created(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path: Path
) -> None:
    # A chart whose pod is never scheduled: installed, but its desired state never holds.
    chart = tmp_path / "stuck"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: stuck\nversion: 0.1.0\n")
    (chart / "templates" / "deployment.yaml").write_text(STUCK)
    fresh = f"t-stuck-{uuid.uuid4().hex[:6]}"
    path = _target(tmp_path, chart, namespace=fresh)
    core = client.CoreV1Api(api)
    try:
        kubeconfig = ["--kubeconfig", str(cluster.kubeconfig)]
        result = runner.invoke(
            app, ["deploy", "helm", "--target", str(path), "--timeout", "5", *kubeconfig]
        )
        assert result.exit_code == 1, result.output
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, result.stderr
        assert "did not reach its desired state within" in lines[0]
        assert lines[0].endswith(
            f"; rolled back: removed what this deploy created and namespace {fresh}"
        )
        assert fresh not in [ns.metadata.name for ns in core.list_namespace().items]
    finally:
        try:
            core.delete_namespace(fresh)
        except client.ApiException as exc:
            if exc.status != 404:
                raise
