"""The second operator of our own (tests/fixtures/operators/cache: a `Cache` resource whose
children are a StatefulSet, its headless Service and a ConfigMap) running against the test
cluster: the target's `alreadyInstalled` operator.

On the embedded kwok cluster pods run no code, so the operator runs as a local process,
started with kopf's own command; its CRD is applied first (the API server must serve its
kind before a run checks it). Bounded: the start has a deadline, the stop sends SIGTERM and
then SIGKILL, and the process never outlives the tests that use it; its log is in the tests'
temporary directory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.local import free_port
from tests.helpers import eventually

OPERATOR_DIR = Path(__file__).parents[1] / "fixtures" / "operators" / "cache"
TARGET = OPERATOR_DIR / "compare.yaml"
CRD: dict[str, Any] = yaml.safe_load((OPERATOR_DIR / "crd.yaml").read_text())
GROUP, VERSION, PLURAL = "cache.fixtures.example.com", "v1", "caches"
START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 15.0


def _apply_crd(api: client.ApiClient) -> bool:
    """Create the CRD, or replace an earlier session's; whether it was created here."""
    extensions = client.ApiextensionsV1Api(api)
    name = CRD["metadata"]["name"]
    try:
        extensions.create_custom_resource_definition(CRD)
        return True
    except client.ApiException as exc:
        if exc.status != 409:
            raise
    live = extensions.read_custom_resource_definition(name)
    version = live.metadata.resource_version
    body = {**CRD, "metadata": {**CRD["metadata"], "resourceVersion": version}}
    extensions.replace_custom_resource_definition(name, body)
    return False


def _served(api: client.ApiClient) -> bool:
    """The kind is established and its storage answers a list (a just-created CRD's storage
    answers 429 "storage is (re)initializing" for a few seconds: the watch would back off)."""
    try:
        client.CustomObjectsApi(api).list_cluster_custom_object(GROUP, VERSION, PLURAL, limit=1)
    except client.ApiException as exc:
        if exc.status in (404, 429):
            return False
        raise
    return True


def _kubeconfig(cluster: ClusterTarget, folder: Path) -> Path:
    """The cluster's kubeconfig, with its context made the current one when one is given
    (kopf and the client read the current context)."""
    if cluster.context is None:
        return cluster.kubeconfig
    data = yaml.safe_load(cluster.kubeconfig.read_text())
    data["current-context"] = cluster.context
    path = folder / "kubeconfig.yaml"
    path.write_text(yaml.safe_dump(data))
    path.chmod(0o600)
    return path


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=1) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (kopf stops its watches), then SIGKILL past the deadline."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(timeout=STOP_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


@pytest.fixture(scope="module")
def cache_operator(
    cluster: ClusterTarget, api: client.ApiClient, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Path]:
    """The Cache operator running against the test cluster; yields its log file."""
    folder = tmp_path_factory.mktemp("cache-operator")
    log = folder / "operator.log"
    created = _apply_crd(api)
    eventually(lambda: _served(api), timeout=START_TIMEOUT_S, what="the Cache kind to be served")
    url = f"http://127.0.0.1:{free_port()}/healthz"
    command = [
        *(sys.executable, "-m", "kopf", "run", "--standalone", "--all-namespaces"),
        *(f"--liveness={url}", str(OPERATOR_DIR / "cache_operator.py")),
    ]
    env = {**os.environ, "KUBECONFIG": str(_kubeconfig(cluster, folder))}
    with log.open("wb") as out:
        process = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _healthy(url):
            if process.poll() is not None or time.monotonic() > deadline:
                tail = log.read_text(errors="replace")[-2000:]
                pytest.fail(f"the Cache operator did not start (exit {process.poll()}):\n{tail}")
            time.sleep(0.2)
        yield log
    finally:
        _stop(process)
        if created:
            # Only what this fixture made: a kept cluster's next session applies it again.
            client.ApiextensionsV1Api(api).delete_custom_resource_definition(
                CRD["metadata"]["name"]
            )
