"""Shared by the test packages: WebApps to deploy (and deploying one with Helm), reading their
pods and live objects, polling with a deadline."""

from __future__ import annotations

import importlib.util
import json
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from kubernetes import client

from compare.approaches import Approach, TargetDeploy, arms, builtin_target
from compare.cluster import ClusterTarget
from compare.deploy.chart_target import deploy_target
from compare.deploy.charts import HelmRelease
from compare.errors import CompareError
from compare.judge import REQUEST_TIMEOUT, DesiredObjects, problems, read
from compare.webapp import WebApp, parse_webapp

T = TypeVar("T")
POLL_S = 0.05


def make_webapp(name: str = "shop", **spec: Any) -> WebApp:
    body = {"replicas": 2, "image": "shop:v1", "port": 8080, **spec}
    return parse_webapp(
        {"apiVersion": "example.com/v1", "kind": "WebApp", "metadata": {"name": name}, "spec": body}
    )


def pods_of(api: client.ApiClient, namespace: str, instance: str) -> list[Any]:
    """Pods of one release that are not being deleted."""
    pods = client.CoreV1Api(api).list_namespaced_pod(
        namespace,
        label_selector=f"app.kubernetes.io/name=webapp,app.kubernetes.io/instance={instance}",
    )
    return [p for p in pods.items if p.metadata.deletion_timestamp is None]


def is_ready(pod: Any) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in pod.status.conditions or [])


def eventually(
    probe: Callable[[], T | None],
    *,
    timeout: float = 30.0,
    what: str = "condition",
) -> T:
    """Poll `probe` until it returns something truthy; fail naming `what` at the deadline."""
    deadline = time.monotonic() + timeout
    last: T | None = None
    while time.monotonic() < deadline:
        last = probe()
        if last:
            return last
        time.sleep(POLL_S)
    raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what} (last: {last!r})")


def deploy_webapp(
    cluster: ClusterTarget,
    webapp: WebApp,
    namespace: str,
    *,
    release: str | None = None,
    timeout: float = 60,
    extra_values: dict[str, Any] | None = None,
) -> HelmRelease:
    """The built-in WebApp deployed by Helm as the target it is (`builtin_target`), through the
    helm arm's one deploy path; the release it made."""
    target = builtin_target(webapp, release=release, extra_values=extra_values)
    deployed, _ = deploy_target(
        cluster, target, target.chart_arm("helm"), namespace, timeout=timeout
    )
    return deployed


# -- reading the live state (the tests' own; the toolkit reads through the judge) ------


def raw(call: Callable[..., Any], *args: Any, **kwargs: Any) -> dict[str, Any] | None:
    """An API call's JSON (camelCase, no model round trip), None on 404; other API errors
    propagate, so pollers can record them and go on."""
    try:
        response = call(*args, _preload_content=False, **kwargs)
    except client.ApiException as exc:
        if exc.status == 404:
            return None
        raise
    data: dict[str, Any] = json.loads(response.data)
    return data


@dataclass(frozen=True)
class LiveState:
    """A WebApp's live Deployment and Service as API JSON (camelCase dicts); None when absent."""

    deployment: dict[str, Any] | None
    service: dict[str, Any] | None


def read_live(api: client.ApiClient, namespace: str, name: str) -> LiveState:
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    try:
        return LiveState(
            deployment=raw(
                apps.read_namespaced_deployment, name, namespace, _request_timeout=REQUEST_TIMEOUT
            ),
            service=raw(
                core.read_namespaced_service, name, namespace, _request_timeout=REQUEST_TIMEOUT
            ),
        )
    except client.ApiException as exc:
        raise CompareError(f"reading {namespace}/{name} failed: {exc.status} {exc.reason}") from exc


def current_problems(api: client.ApiClient, namespace: str, desired: DesiredObjects) -> list[str]:
    """What keeps the desired state from holding right now (empty: it holds)."""
    try:
        return problems(desired, read(api, namespace, desired.kinds))
    except client.ApiException as exc:
        raise CompareError(
            f"reading namespace {namespace} failed: {exc.status} {exc.reason}"
        ) from exc


def deploy_builtin(
    cluster: ClusterTarget,
    approach: Approach,
    webapp: WebApp,
    namespace: str,
    *,
    timeout: float = 120.0,
) -> TargetDeploy:
    """The built-in WebApp deployed by `approach` into `namespace` the one way every arm is
    (`compare.approaches.arms.deploy_arm`: what it needs installed first - the toolkit's
    operator - then the arm, waited for until its desired state holds)."""
    target = builtin_target(webapp)
    return arms.deploy_arm(
        approach, cluster, target, namespace, timeout=timeout, rollback=False
    ).deployed


def undeploy_builtin(
    cluster: ClusterTarget,
    approach: Approach,
    webapp: WebApp,
    namespace: str,
    *,
    timeout: float = 120.0,
) -> bool:
    """What `deploy_builtin` made removed and waited for until it is gone."""
    return approach.undeploy_target(cluster, builtin_target(webapp), namespace, timeout=timeout)


def assert_stopped_in_preflight(out: Path, line: str) -> None:
    """Nothing ran: each run directory under `out` (a run stopped in its preflight still writes
    results.json) holds no trial, is not complete, and says why (`preflightError`)."""
    from compare.results import load_results

    for run_dir in out.iterdir() if out.exists() else ():
        stopped = load_results(run_dir)
        assert not stopped.complete and stopped.trials == [], run_dir
        assert stopped.preflight_error is not None, run_dir
        assert line in stopped.preflight_error or stopped.preflight_error in line, (
            line,
            stopped.preflight_error,
        )


def load_balancer_address(
    api: client.ApiClient, namespace: str, name: str, timeout: float = 10.0
) -> str:
    """The ingress address the embedded cluster's address controller gives LoadBalancer
    Service `name` (seconds; fails naming the Service)."""
    core = client.CoreV1Api(api)

    def address() -> str | None:
        found = core.read_namespaced_service(name, namespace, _request_timeout=REQUEST_TIMEOUT)
        ingress = (found.status.load_balancer and found.status.load_balancer.ingress) or []
        return next((i.ip for i in ingress if i.ip), None)

    return eventually(address, timeout=timeout, what=f"an address of Service {namespace}/{name}")


BENCH = Path(__file__).resolve().parents[1] / "bench"


def bench_module(name: str) -> ModuleType:
    """A benchmark script of `bench/` as a module (its pure parts are unit-tested), with the
    bench's own imports (operator_common) found while it loads; registered in `sys.modules`
    (its dataclasses look their module up there)."""
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH))
