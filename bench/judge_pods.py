"""Benchmark: what judging pods against their template costs the judge on each watch event.

Deploys the built-in WebApp with Helm (3 replicas, or `--replicas`) in a fresh namespace of
the embedded cluster, reads the namespace once, then times `compare.judge.problems` on that
reading: with the pods judged (the judge as it is), with their judgement cached (the common
case: an event in which no pod changed), and with every pod new to the cache (every pod
changed since the last event), against the judge without pods (`pod_drift` left out). No API
call is made while timing: pods are judged from the watch cache. Never passes or fails.

    .venv/bin/python bench/judge_pods.py [--name CLUSTER] [--replicas 3] [--reps 2000]
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable

from kubernetes import client

from compare.approaches import arms, builtin_target, desired_objects, get
from compare.cluster import ClusterTarget, EmbeddedCluster
from compare.judge import pods as pods_module
from compare.judge import problems, read, verdict
from compare.webapp import parse_webapp


def per_call(fn: Callable[[], object], reps: int) -> float:
    """Median of 5 batches, microseconds per call."""
    batches = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(reps):
            fn()
        batches.append((time.perf_counter() - start) / reps * 1e6)
    return statistics.median(batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--name", default=None, help="the embedded cluster (default: default)")
    parser.add_argument("--replicas", type=int, default=3)
    parser.add_argument("--reps", type=int, default=2000)
    args = parser.parse_args()
    status = EmbeddedCluster(args.name).status()
    target = ClusterTarget(status.kubeconfig, None, embedded=True)
    api = target.api_client()
    namespace = f"bench-pods-{uuid.uuid4().hex[:5]}"
    core = client.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": namespace}})
    try:
        webapp = parse_webapp(
            {
                "apiVersion": "example.com/v1",
                "kind": "WebApp",
                "metadata": {"name": "shop"},
                "spec": {"replicas": args.replicas, "image": "shop:v1", "port": 8080},
            }
        )
        arms.deploy_arm(
            get("helm"), target, builtin_target(webapp), namespace, timeout=120.0, rollback=False
        )
        desired = desired_objects(api, "helm", webapp, namespace)
        reading = read(api, namespace, desired.kinds)
        assert problems(desired, reading) == [], problems(desired, reading)
        pods = reading.all("Pod")

        with_pods = per_call(lambda: problems(desired, reading), args.reps)

        def uncached() -> object:
            pods_module._cache.clear()
            return problems(desired, reading)

        cold = per_call(uncached, max(args.reps // 10, 50))
        drift_only = per_call(lambda: verdict.pod_drift(desired, reading), args.reps)
        real = verdict.pod_drift
        verdict.pod_drift = lambda _d, _r: {}  # type: ignore[assignment]
        try:
            without = per_call(lambda: problems(desired, reading), args.reps)
        finally:
            verdict.pod_drift = real
        print(f"{len(pods)} pods; problems() per event, microseconds (median of 5 batches):")
        print(f"  without judging pods             {without:8.1f}")
        print(f"  pods judged, cached (no pod new) {with_pods:8.1f}  (+{with_pods - without:.1f})")
        print(f"  pods judged, every pod new       {cold:8.1f}  (+{cold - without:.1f})")
        print(f"  of which pod_drift alone, cached {drift_only:8.1f}")
        print("  API calls added per event: 0 (pods come from the watch cache)")
    finally:
        core.delete_namespace(namespace, propagation_policy="Background")
        api.close()


if __name__ == "__main__":
    main()
