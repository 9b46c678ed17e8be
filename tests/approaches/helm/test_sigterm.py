"""SIGTERM during `compare deploy helm` is handled like Ctrl-C: the release it installed is
rolled back, exit non-zero, one line says so (issue 24: it left the namespace, a failed
release and a Service behind).

The deploy is held in its wait for the desired state by a ResourceQuota of zero pods in a
namespace made beforehand (so the namespace stays: the command did not create it)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import client

from compare.cluster import ClusterTarget
from compare.deploy.charts import list_releases
from tests.helpers import eventually

pytestmark = pytest.mark.cluster

COMPARE = str(Path(sys.executable).with_name("compare"))


def _pods_admitted(api: client.ApiClient, namespace: str) -> bool:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "admitted-probe"},
        "spec": {"containers": [{"name": "c", "image": "probe:v1"}]},
    }
    try:
        client.CoreV1Api(api).create_namespaced_pod(namespace, pod, dry_run="All")
    except client.ApiException as exc:
        if exc.status == 403 and "quota" in str(exc.body):
            return False
        raise
    return True


def test_sigterm_during_deploy_rolls_back(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    client.CoreV1Api(api).create_namespaced_resource_quota(
        namespace,
        {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": "no-pods"},
            "spec": {"hard": {"pods": "0"}},
        },
    )
    eventually(lambda: not _pods_admitted(api, namespace), timeout=40, what="quota enforced")
    app_file = tmp_path / "app.yaml"
    app_file.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "example.com/v1",
                "kind": "WebApp",
                "metadata": {"name": "shop"},
                "spec": {"image": "shop:v1", "replicas": 1},
            }
        )
    )
    process = subprocess.Popen(
        [
            *(COMPARE, "deploy", "helm", "--app", str(app_file), "-n", namespace),
            *("--timeout", "300", "--kubeconfig", str(cluster.kubeconfig)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list_releases(cluster, namespace):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the release never appeared"
            time.sleep(0.2)
        time.sleep(1.0)  # in the wait for the desired state now
        process.send_signal(signal.SIGTERM)
        _, stderr = process.communicate(timeout=180)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode != 0, stderr
    assert "Traceback" not in stderr
    assert list_releases(cluster, namespace) == [], stderr
    services = client.CoreV1Api(api).list_namespaced_service(namespace).items
    assert services == [], [s.metadata.name for s in services]
    # The namespace was there before: it stays.
    client.CoreV1Api(api).read_namespace(namespace)
