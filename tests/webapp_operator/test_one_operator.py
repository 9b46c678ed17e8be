"""One operator per cluster, found rather than duplicated — on the real embedded cluster.

- the same cluster through a copied kubeconfig uses the operator that leads it: no second
  process, nothing installed over it;
- the chart's in-cluster operator, whose pods never run on kwok (no Lease renewed), is taken
  over and WebApps are reconciled;
- an in-cluster holder seen renewing its Lease is used, unless the installed CRD is not this
  toolkit's: then one line names it;
- a process started here that cannot lead is stopped again before the error is raised;
- `compare undeploy operator` stops the operator only when no WebApp is left, or when asked.
"""

from __future__ import annotations

import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches.operator import Operator
from compare.approaches.operator.arm import remaining
from compare.approaches.operator.controllers import (
    OperatorHandle,
    install_operator,
    operator_status,
    start_operator,
    stop_operator,
)
from compare.approaches.operator.lease import crd_difference, read_crd
from compare.approaches.operator.process import DEFAULT_INSTANCE, OPERATOR
from compare.cli import app
from compare.cluster import ClusterTarget, cluster_key, tool_path
from compare.deploy.processes import alive, read_process
from compare.errors import CompareError
from compare.paths import CHARTS_DIR
from compare.target.builtin import webapp_named
from compare.webapp import API_GROUP, API_VERSION, PLURAL
from tests.helpers import deploy_builtin, eventually, make_webapp
from webapp_operator.names import CRD_NAME, LEASE_NAME, OPERATOR_NAMESPACE

from .conftest import FAST
from .helpers import get_deployment, get_webapp

pytestmark = pytest.mark.cluster

runner = CliRunner()
CHART = CHARTS_DIR / "webapp-operator"


# -- helpers ---------------------------------------------------------------------------------


def _micro(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _operator_pids(*targets: ClusterTarget) -> set[int]:
    """The live local operators started for these targets, one pid each: the supervisor's
    (its `python -m webapp_operator` child is the same replica). Other clusters' operators on
    this machine are not counted."""
    marks = [str(OPERATOR.state_dir(t)).encode() + b"/" for t in targets]
    pids = set()
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes()
            state = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[0]
        except OSError:
            continue
        supervised = b"compare.deploy.supervise" not in cmdline and _supervised(proc)
        if (
            b"webapp_operator" in cmdline
            and state != "Z"
            and not supervised
            and any(m in cmdline for m in marks)
        ):
            pids.add(int(proc.name))
    return pids


def _supervised(proc: Path) -> bool:
    try:
        ppid = (proc / "stat").read_text().rsplit(")", 1)[-1].split()[2]
        return b"compare.deploy.supervise" in Path(f"/proc/{ppid}/cmdline").read_bytes()
    except (OSError, IndexError):
        return False


def _set_lease(
    api: client.ApiClient,
    namespace: str,
    holder: str | None,
    *,
    renewed: datetime,
    duration: int,
) -> None:
    """Create or overwrite the operator Lease of a namespace (what a replica writes)."""
    leases = client.CoordinationV1Api(api)
    spec = {
        "holderIdentity": holder,
        "leaseDurationSeconds": duration,
        "acquireTime": _micro(renewed),
        "renewTime": _micro(renewed),
    }
    metadata: dict[str, Any] = {"name": LEASE_NAME, "namespace": namespace}
    body = {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": metadata,
        "spec": spec,
    }
    try:
        current = leases.read_namespaced_lease(LEASE_NAME, namespace)
    except client.ApiException as exc:
        if exc.status != 404:
            raise
        leases.create_namespaced_lease(namespace, body)
        return
    metadata["resourceVersion"] = current.metadata.resource_version
    leases.replace_namespaced_lease(LEASE_NAME, namespace, body)


def _delete_lease(api: client.ApiClient, namespace: str) -> None:
    try:
        client.CoordinationV1Api(api).delete_namespaced_lease(LEASE_NAME, namespace)
    except client.ApiException as exc:
        if exc.status != 404:
            raise


class RenewingHolder:
    """A leader elsewhere (the chart's replica on a real cluster): renews its Lease in a
    namespace every half second, as the operator's elector does."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api, self.namespace = api, namespace
        self.identity = f"chart-webapp-operator-7d9f8-x2k4q_{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            _set_lease(
                self.api, self.namespace, self.identity, renewed=datetime.now(UTC), duration=15
            )
            self._stop.wait(0.5)

    def __enter__(self) -> RenewingHolder:
        _set_lease(self.api, self.namespace, self.identity, renewed=datetime.now(UTC), duration=15)
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()
        _delete_lease(self.api, self.namespace)


@pytest.fixture
def copied(cluster: ClusterTarget, tmp_path: Path) -> Iterator[ClusterTarget]:
    """The test cluster reached through a copy of its kubeconfig, as a new user would."""
    path = tmp_path / "copied-kubeconfig.yaml"
    shutil.copy(cluster.kubeconfig, path)
    target = ClusterTarget(path, cluster.context)
    assert cluster_key(target) != cluster_key(cluster)  # the premise: another state directory
    yield target
    shutil.rmtree(OPERATOR.state_dir(target), ignore_errors=True)


@pytest.fixture
def other_namespace(api: client.ApiClient) -> Iterator[str]:
    name = f"t-other-{uuid.uuid4().hex[:5]}"
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name, propagation_policy="Background")


def _webapp_names(api: client.ApiClient) -> list[str]:
    items = client.CustomObjectsApi(api).list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)
    return [f"{i['metadata']['namespace']}/{i['metadata']['name']}" for i in items["items"]]


# -- (a) the same cluster through another kubeconfig ----------------------------------------


@pytest.mark.usefixtures("restore_operator")
def test_copied_kubeconfig_uses_the_running_operator(
    cluster: ClusterTarget,
    copied: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    operator: OperatorHandle,
    tmp_path: Path,
) -> None:
    leader = start_operator(cluster, options=FAST)
    assert leader.ready and leader.pid is not None
    before = _operator_pids(cluster, copied)

    started = time.monotonic()
    found = install_operator(copied)
    elapsed = time.monotonic() - started
    print(f"\nfound the leading operator through a copied kubeconfig in {elapsed:.2f}s")
    assert found.found and found.pid == leader.pid and found.holder
    assert "started for" in found.describe()

    app_file = tmp_path / "shop.yaml"
    app_file.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "example.com/v1",
                "kind": "WebApp",
                "metadata": {"name": "shop"},
                "spec": {"replicas": 2, "image": "shop:v1"},
            }
        )
    )
    deployed = runner.invoke(
        app,
        [
            *("deploy", "operator", "--kubeconfig", str(copied.kubeconfig)),
            *("--app", str(app_file), "--namespace", namespace, "--timeout", "60"),
        ],
    )
    assert deployed.exit_code == 0, deployed.output
    assert "operator found on" in deployed.output and "nothing installed" in deployed.output
    assert f"pid {leader.pid}" in deployed.output
    assert f"WebApp shop (replicas 2, image shop:v1) in namespace {namespace}: Available" in (
        deployed.output
    )
    assert (get_deployment(api, namespace, "shop") or {})["spec"]["replicas"] == 2

    # No second process, no state of its own: the copy's state directory records none.
    assert _operator_pids(cluster, copied) == before
    assert read_process(OPERATOR.state_dir(copied), DEFAULT_INSTANCE) is None
    status = operator_status(cluster)
    assert status is not None and status.running and status.pid == leader.pid

    # Undeploy through the copy runs the finalizer with the same operator.
    removed = runner.invoke(
        app,
        [
            *("undeploy", "operator", "--kubeconfig", str(copied.kubeconfig)),
            *("--namespace", namespace, "--name", "shop", "--keep-operator"),
        ],
    )
    assert removed.exit_code == 0, removed.output
    assert get_webapp(api, namespace, "shop") is None
    assert _operator_pids(cluster, copied) == before


# -- (b) the chart's operator, installed in the cluster, whose pods never run on kwok ---------


def _helm(cluster: ClusterTarget, *args: str) -> str:
    result = subprocess.run(
        [tool_path("helm"), "--kubeconfig", str(cluster.kubeconfig), *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.usefixtures("restore_operator")
def test_in_cluster_chart_without_a_live_leader_is_taken_over(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, operator: OperatorHandle
) -> None:
    chart_ns = namespace
    # The webhook of the chart would be served by pods that never run here: left out, so
    # that what is tested is the Lease, not an unreachable webhook.
    _helm(
        cluster,
        "install",
        "chart",
        str(CHART),
        "-n",
        chart_ns,
        "--set",
        "webhook.enabled=false",
    )
    try:
        deployment = client.AppsV1Api(api).read_namespaced_deployment(
            "chart-webapp-operator", chart_ns
        )
        assert deployment.spec.replicas == 2
        # A replica that did lead once and died: its holder is stale by the API server's clock.
        chart_holder = f"chart-webapp-operator-5f7c9-abcde_{uuid.uuid4().hex[:8]}"
        _set_lease(
            api,
            chart_ns,
            chart_holder,
            renewed=datetime.now(UTC) - timedelta(seconds=60),
            duration=15,
        )
        # And the local operator killed without releasing its Lease: stale within seconds.
        dead = stop_operator(cluster, kill=True)
        assert dead is not None
        before = _operator_pids(cluster)

        started = time.monotonic()
        deploy_builtin(cluster, Operator(), make_webapp("shop", replicas=3), chart_ns, timeout=90)
        elapsed = time.monotonic() - started
        print(
            f"\ntook over a stale local holder (lease {FAST.lease_duration}s) and a stale chart "
            f"holder; WebApp Available after {elapsed:.2f}s"
        )
        status = operator_status(cluster)
        assert status is not None and status.running and status.pid != dead.pid
        assert _operator_pids(cluster) == before | {status.pid}
        lease = client.CoordinationV1Api(api).read_namespaced_lease(LEASE_NAME, OPERATOR_NAMESPACE)
        assert lease.spec.holder_identity == status.holder
        body = get_webapp(api, chart_ns, "shop")
        assert body is not None and body["status"]["phase"] == "Running"
        assert (get_deployment(api, chart_ns, "shop") or {})["spec"]["replicas"] == 3
    finally:
        _helm(cluster, "uninstall", "chart", "-n", chart_ns)


# -- an in-cluster leader that renews --------------------------------------------------------


@pytest.fixture
def crd_restored(cluster: ClusterTarget, operator: OperatorHandle) -> Iterator[None]:
    yield
    # The CRD (altered by a test) and the webhook configuration back to this toolkit's.
    stop_operator(cluster)
    install_operator(cluster, options=FAST)


@pytest.mark.usefixtures("crd_restored")
def test_renewing_in_cluster_leader_is_used_or_named(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    stop_operator(cluster)  # graceful: the local Lease is released
    before = _operator_pids(cluster)
    with RenewingHolder(api, namespace) as holder:
        started = time.monotonic()
        found = install_operator(cluster, options=FAST)
        elapsed = time.monotonic() - started
        print(f"\nrecognised a renewing in-cluster holder in {elapsed:.2f}s")
        assert found.found and found.pid is None and found.holder == holder.identity
        assert f"Lease {namespace}/{LEASE_NAME}" in found.describe()
        assert "not a process of this machine" in found.describe()
        assert _operator_pids(cluster) == before
        status = operator_status(cluster)
        assert status is None or not status.running

        # The same holder, but the installed CRD is not this toolkit's: one line, at once.
        client.ApiextensionsV1Api(api).patch_custom_resource_definition(
            CRD_NAME,
            [
                {
                    "op": "add",
                    "path": "/spec/versions/0/additionalPrinterColumns/0/description",
                    "value": "changed by another version",
                }
            ],
        )
        with pytest.raises(CompareError) as failure:
            install_operator(cluster, options=FAST)
        message = str(failure.value)
        assert "\n" not in message
        assert holder.identity in message and "additionalPrinterColumns" in message
        assert "stop it" in message
        assert _operator_pids(cluster) == before


def test_crd_difference_names_what_differs(api: client.ApiClient, operator: OperatorHandle) -> None:
    installed = read_crd(api)
    assert crd_difference(installed) is None
    assert crd_difference(None) == f"the CRD {CRD_NAME} is not installed"
    assert installed is not None
    changed: dict[str, Any] = {**installed, "spec": {**installed["spec"]}}
    version = {**changed["spec"]["versions"][0], "served": False}
    changed["spec"]["versions"] = [version]
    assert "does not serve v1" in (crd_difference(changed) or "")


# -- a start that fails leaves nothing running -----------------------------------------------


@pytest.mark.usefixtures("restore_operator")
def test_failed_start_stops_the_process(cluster: ClusterTarget, api: client.ApiClient) -> None:
    stop_operator(cluster)
    before = _operator_pids(cluster)
    # A holder that is stale by the server's clock (so it is taken over) but announces a
    # lease far longer than the start is given: the new process stands by until the timeout.
    _set_lease(
        api,
        OPERATOR_NAMESPACE,
        "ghost_0000",
        renewed=datetime.now(UTC) - timedelta(seconds=45),
        duration=30,
    )
    try:
        with pytest.raises(CompareError) as failure:
            start_operator(cluster, options=FAST, timeout=3)
        message = str(failure.value)
        assert "\n" not in message and "not ready within 3s" in message
        assert "it was stopped" in message
        info = read_process(OPERATOR.state_dir(cluster), DEFAULT_INSTANCE)
        assert info is not None and not alive(info)
        assert _operator_pids(cluster) == before
    finally:
        _delete_lease(api, OPERATOR_NAMESPACE)


# -- undeploy stops the operator only when no WebApp is left, or when asked ------------------


@pytest.fixture
def cli_args(cluster: ClusterTarget, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    if cluster.embedded:
        monkeypatch.setenv("COMPARE_CLUSTER_NAME", cluster.kubeconfig.parent.name)
        return []
    return ["--kubeconfig", str(cluster.kubeconfig)]


@pytest.mark.usefixtures("restore_operator")
def test_undeploy_keeps_the_operator_while_webapps_remain(
    cli_args: list[str],
    cluster: ClusterTarget,
    api: client.ApiClient,
    namespace: str,
    other_namespace: str,
    operator: OperatorHandle,
) -> None:
    leader = start_operator(cluster, options=FAST)
    deploy_builtin(cluster, Operator(), make_webapp("shop"), namespace, timeout=60)
    deploy_builtin(cluster, Operator(), make_webapp("cart"), other_namespace, timeout=60)

    def undeploy(*args: str) -> str:
        result = runner.invoke(app, [*cli_args, "undeploy", "operator", *args])
        assert result.exit_code == 0, result.output
        return result.output

    # Another namespace still has a WebApp: the operator stays.
    out = undeploy("--namespace", namespace, "--name", "shop")
    assert f"WebApp shop removed from namespace {namespace}" in out
    assert "operator left running" in out and "operator stopped" not in out
    status = operator_status(cluster)
    assert status is not None and status.running and status.pid == leader.pid

    # A WebApp that does not exist: nothing deleted, nothing stopped.
    out = undeploy("--namespace", namespace, "--name", "nosuch")
    assert f"no WebApp nosuch in namespace {namespace}: nothing to remove" in out
    assert "operator stopped" not in out
    assert alive(read_process(OPERATOR.state_dir(cluster), DEFAULT_INSTANCE))

    # The webhook still admits writes elsewhere (the operator serves it).
    client.CustomObjectsApi(api).patch_namespaced_custom_object(
        API_GROUP, API_VERSION, other_namespace, PLURAL, "cart", {"spec": {"replicas": 3}}
    )
    eventually(
        lambda: (
            (get_deployment(api, other_namespace, "cart") or {}).get("spec", {}).get("replicas")
            == 3
        ),
        what="cart scaled by the operator",
    )

    # Leftovers of earlier tests go (their namespaces are being deleted); then the last one.
    eventually(
        lambda: _webapp_names(api) == [f"{other_namespace}/cart"],
        timeout=90,
        what="only the last WebApp left",
    )
    out = undeploy("--namespace", other_namespace, "--name", "cart")
    assert f"WebApp cart removed from namespace {other_namespace}" in out
    assert f"operator stopped (pid {leader.pid}" in out
    assert remaining(cluster, webapp_named("any")) == 0
    assert not alive(read_process(OPERATOR.state_dir(cluster), DEFAULT_INSTANCE))


@pytest.mark.usefixtures("restore_operator")
def test_undeploy_stop_operator_flag(
    cli_args: list[str], cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    leader = start_operator(cluster, options=FAST)
    deploy_builtin(cluster, Operator(), make_webapp("shop"), namespace, timeout=60)
    result = runner.invoke(
        app,
        [
            *(*cli_args, "undeploy", "operator", "--namespace", namespace),
            *("--name", "nosuch", "--stop-operator"),
        ],
    )
    assert result.exit_code == 0, result.output
    assert f"operator stopped (pid {leader.pid}" in result.output
    assert "WebApp(s) remain without an operator" in result.output
    assert not alive(read_process(OPERATOR.state_dir(cluster), DEFAULT_INSTANCE))

    both = runner.invoke(
        app,
        [*cli_args, "undeploy", "operator", "--name", "x", "--stop-operator", "--keep-operator"],
    )
    assert both.exit_code == 2
    assert "contradict" in both.output
