"""One real operator process for the whole operator test package (kubebuilder's `make run`).

It runs exactly as `compare deploy operator` starts it (ServiceAccount identity, webhook on
127.0.0.1), with short lease timings so that restart and failover tests stay fast. Tests that
stop, kill or replace it leave it running again (`restore_operator`).
"""

from __future__ import annotations

from collections.abc import Generator, Iterator

import pytest
from kubernetes import client

from compare.approaches.operator.controllers import (
    OperatorHandle,
    install_operator,
    operator_status,
    start_operator,
    stop_operator,
)
from compare.approaches.operator.process import OperatorOptions
from compare.cluster import ClusterTarget
from compare.webapp import API_GROUP, API_VERSION, PLURAL
from tests.helpers import eventually

# Lease timings a test can wait out (takeover within ~4.5 s of a killed leader), with a renew
# deadline that leaves a loaded 2-core machine a second of margin over what it was seen to meet.
FAST = OperatorOptions(lease_duration=4.0, lease_renew_deadline=3.0, lease_retry_period=0.5)


# On a failed test, the operator's log lines about the test's namespace and its own lifecycle
# go into the failure report: the log itself is gone with the test session's cluster, and a
# failure seen only under a loaded CI run cannot be explained without it.
LIFECYCLE_WORDS = ("--- ", "lead", "Lease", "exit", "Traceback", "Error", "ready")
LOG_LINES = 200


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    funcargs = getattr(item, "funcargs", {})
    handle = funcargs.get("operator")
    if not report.failed or not isinstance(handle, OperatorHandle):
        return report
    namespace = funcargs.get("namespace")
    try:
        lines = handle.log_path.read_text(errors="replace").splitlines()
    except OSError as exc:
        report.sections.append(("operator log", f"unreadable: {exc}"))
        return report
    picked = [
        line
        for line in lines
        if (isinstance(namespace, str) and namespace in line)
        or any(word in line for word in LIFECYCLE_WORDS)
    ]
    report.sections.append(("operator log", "\n".join(picked[-LOG_LINES:])))
    return report


@pytest.fixture(scope="package")
def operator(cluster: ClusterTarget, api: client.ApiClient) -> Iterator[OperatorHandle]:
    stop_operator(cluster)  # one left by an earlier session may run with other options
    handle = install_operator(cluster, options=FAST)
    yield handle
    # Test namespaces are deleted without waiting; their WebApps carry the finalizer, so the
    # operator must outlive them or the namespaces stay Terminating.
    custom = client.CustomObjectsApi(api)

    def leftovers() -> bool:
        items = custom.list_cluster_custom_object(API_GROUP, API_VERSION, PLURAL)["items"]
        return not [i for i in items if i["metadata"]["namespace"].startswith("t-")]

    start_operator(cluster, options=FAST)
    eventually(leftovers, timeout=60, what="test WebApps to be gone")
    stop_operator(cluster)


@pytest.fixture
def restore_operator(cluster: ClusterTarget, operator: OperatorHandle) -> Iterator[None]:
    """For tests that stop or kill the operator: running again afterwards."""
    yield
    status = operator_status(cluster)
    if status is None or not status.running:
        start_operator(cluster, options=FAST)
