"""Benchmark: 200 WebApps created at once — convergence time and the operator's memory.

All WebApps (1 replica each, so the simulated nodes hold 200 pods) are applied from a thread
pool as fast as the API server takes them. Printed: time to apply them all; time until every
Deployment and Service exists (the operator's own work); time until every WebApp reports
phase Running for its generation (the rest is the control plane creating ReplicaSets and
pods); the reconciles and writes that took; the operator's resident memory before, at its
peak (VmHWM) and after, and its CPU time; then the time to delete them all (each finalizer
runs). Never passes or fails.

    .venv/bin/python bench/operator_scale.py [--count 200] [--cluster NAME | --kubeconfig FILE]
"""

from __future__ import annotations

import argparse
import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kubernetes import client
from operator_common import (
    add_cluster_args,
    bench_target,
    delete_namespace,
    operator_running,
    wait_for,
)

from compare.deploy.operator import apply_webapp
from compare.deploy.operator_install import state_dir
from compare.deploy.operator_process import health, read_process
from compare.webapp import API_GROUP, API_VERSION, PLURAL, parse_webapp


def memory(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM (peak RSS) in MiB."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            fields[key] = int(value.split()[0]) // 1024
    return fields


def cpu_seconds(pid: int) -> float:
    stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=200)
    add_cluster_args(parser)
    args = parser.parse_args()
    with bench_target(args) as target, operator_running(target) as handle:
        api = target.api_client()
        info = read_process(state_dir(target))
        assert info is not None and handle.pid is not None
        pid = handle.pid
        namespace = f"bench-scale-{uuid.uuid4().hex[:5]}"
        client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
        webapps = [
            parse_webapp(
                {
                    "apiVersion": "example.com/v1",
                    "kind": "WebApp",
                    "metadata": {"name": f"app-{i:03d}"},
                    "spec": {
                        "replicas": 1,
                        "image": f"web:v{i % 7}",
                        "env": [{"name": "INDEX", "value": str(i)}],
                    },
                }
            )
            for i in range(args.count)
        ]
        before = memory(pid)
        counters = health(info) or {}
        cpu_before = cpu_seconds(pid)
        print(
            f"cpus {os.cpu_count()}, load {os.getloadavg()[0]:.1f}, operator pid {pid}, "
            f"{args.count} WebApps x 1 replica"
        )
        custom = client.CustomObjectsApi(api)

        def running() -> bool:
            items = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)[
                "items"
            ]
            done = [
                i
                for i in items
                if (i.get("status") or {}).get("phase") == "Running"
                and i["status"].get("observedGeneration") == i["metadata"]["generation"]
            ]
            return len(done) == args.count

        start = time.perf_counter()
        with ThreadPoolExecutor(max_workers=8) as pool:
            list(pool.map(lambda w: apply_webapp(api, w, namespace), webapps))
        applied = time.perf_counter() - start
        apps, core = client.AppsV1Api(api), client.CoreV1Api(api)

        def children() -> bool:
            deployments = apps.list_namespaced_deployment(namespace).items
            services = core.list_namespaced_service(namespace).items
            return len(deployments) == len(services) == args.count

        wait_for(children, timeout=600, what="all children", poll=0.2)
        created = time.perf_counter() - start
        wait_for(running, timeout=600, what="all Running", poll=0.2)
        converged = time.perf_counter() - start
        after = health(info) or {}
        cpu = cpu_seconds(pid) - cpu_before
        peak = memory(pid)
        print(f"  applied all WebApps              {applied:7.2f} s")
        print(f"  every Deployment + Service exists {created:6.2f} s  (the operator's part)")
        print(f"  all Running (from first apply)   {converged:7.2f} s  (pods: the control plane's)")
        print(
            f"  reconciles {after['reconciles'] - counters.get('reconciles', 0)}, children "
            f"created/corrected {after['changes'] - counters.get('changes', 0)}, "
            f"failures {after['failures'] - counters.get('failures', 0)}"
        )
        print(f"  operator CPU during convergence  {cpu:7.2f} s")
        print(
            f"  operator RSS: before {before['VmRSS']} MiB, peak {peak['VmHWM']} MiB, "
            f"after {peak['VmRSS']} MiB"
        )
        start = time.perf_counter()
        delete_namespace(api, namespace, timeout=600)
        print(
            f"  namespace deleted ({args.count} finalizers ran){time.perf_counter() - start:7.2f} s"
        )


if __name__ == "__main__":
    main()
