"""Shared fixtures: one real cluster per test session, one namespace per test.

With KUBECONFIG set the suite runs against that cluster; otherwise it starts an embedded
cluster named `compare-test` (kept between sessions with COMPARE_KEEP_CLUSTER=1).
"""

from __future__ import annotations

import os
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client

from compare.approaches import forget_cluster
from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.cluster.target import check_reachable
from compare.errors import CompareError

# Helpers working in parallel each set their own name.
TEST_CLUSTER = os.environ.get("COMPARE_TEST_CLUSTER", "compare-test")


@pytest.fixture(scope="session")
def cluster() -> Iterator[ClusterTarget]:
    """The cluster for behaviour tests: the caller's KUBECONFIG or the embedded one."""
    given = os.environ.get("KUBECONFIG")
    if given:
        target = ClusterTarget(Path(given.split(os.pathsep)[0]), os.environ.get("KUBECONTEXT"))
        check_reachable(target)
        yield target
        return
    embedded = EmbeddedCluster(TEST_CLUSTER)
    started = not embedded.status().running
    try:
        status = embedded.up()
    except CompareError:
        # A directory left by a crashed earlier session that cannot be restarted: start afresh.
        embedded.down()
        status = embedded.up()
    target = ClusterTarget(status.kubeconfig, None, embedded=True)
    yield target
    if started and not os.environ.get("COMPARE_KEEP_CLUSTER"):
        # Tests start the local operator and Flux processes; they must not outlive the cluster.
        forget_cluster(target)
        embedded.down()


@pytest.fixture(scope="session")
def api(cluster: ClusterTarget) -> Iterator[client.ApiClient]:
    api_client = cluster.api_client()
    yield api_client
    api_client.close()


@pytest.fixture
def namespace(api: client.ApiClient, request: pytest.FixtureRequest) -> Iterator[str]:
    """A fresh namespace per test, deleted afterwards (without waiting)."""
    base = re.sub(r"[^a-z0-9-]", "-", request.node.name.lower())[:40].strip("-")
    name = f"t-{base}-{uuid.uuid4().hex[:5]}"
    core = client.CoreV1Api(api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    try:
        core.delete_namespace(name, propagation_policy="Background")
    except client.ApiException as exc:
        if exc.status != 404:
            raise
