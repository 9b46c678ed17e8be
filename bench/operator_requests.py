"""Benchmark: the operator's API requests per WebApp per minute at rest, by verb.

N WebApps (default 100) are created and left to settle; then nothing changes for a window
(`--minutes`, default 2) while the operator runs, and the API server itself counts:

- by identity: the API server's audit log, with a policy that records only the operator's
  ServiceAccount (`system:serviceaccount:webapp-system:webapp-operator`) at Metadata level,
  once per request when it completes (a watch when it ends, as the metric counts it). The
  embedded cluster is created with that policy when this script starts it;
- by difference: `apiserver_request_total` scraped from the API server's /metrics at both
  ends of the window, minus the same scrape over an equal window with the operator stopped
  (everything else in the cluster: controllers, kwok, this script's own scrapes);
- as a total cross-check: `apiserver_flowcontrol_dispatched_requests_total` for the
  `service-accounts` flow schema (on the embedded cluster only the operator uses a
  ServiceAccount token).

Run it before and after a change of the operator; it never passes or fails.

    .venv/bin/python bench/operator_requests.py [--count 100] [--minutes 2] [--settle 60]
        [--cluster NAME | --kubeconfig FILE] [--json FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import time
from collections import Counter
from pathlib import Path
from typing import Any

from kubernetes import client
from operator_common import (
    add_cluster_args,
    add_output_args,
    apply_webapps,
    bench_target,
    counted,
    counters,
    make_webapp,
    new_namespace,
    operator_info,
    operator_running,
    report,
    running_webapps,
    wait_for,
    write_json,
)

from compare.approaches.operator.controllers import stop_operator
from compare.approaches.operator.process import health
from compare.cluster import EmbeddedCluster
from compare.webapp import API_GROUP, API_VERSION, PLURAL
from webapp_operator.names import OPERATOR_NAMESPACE, SERVICE_ACCOUNT

IDENTITY = f"system:serviceaccount:{OPERATOR_NAMESPACE}:{SERVICE_ACCOUNT}"
AUDIT_POLICY = f"""\
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived, ResponseStarted]
rules:
- level: Metadata
  users: ["{IDENTITY}"]
- level: None
"""
VERBS = ("GET", "LIST", "WATCH", "PATCH", "APPLY", "PUT", "POST", "DELETE")
# audit verbs -> the metric's verb label (server-side apply is a `patch` in the audit log)
AUDIT_VERBS = {
    "get": "GET",
    "list": "LIST",
    "watch": "WATCH",
    "patch": "PATCH",
    "update": "PUT",
    "create": "POST",
    "delete": "DELETE",
    "deletecollection": "DELETE",
}
LABEL = re.compile(r'(\w+)="([^"]*)"')


def scrape(api: client.ApiClient) -> str:
    method, url, headers, _, _ = api.param_serialize(
        "GET", "/metrics", auth_settings=["BearerToken"]
    )
    response = api.call_api(method, url, header_params=headers, _request_timeout=30)
    return response.read().decode()


def by_verb(metrics: str) -> Counter[str]:
    """apiserver_request_total summed per verb."""
    totals: Counter[str] = Counter()
    for line in metrics.splitlines():
        if line.startswith("apiserver_request_total{"):
            labels, _, value = line.rpartition(" ")
            verb = dict(LABEL.findall(labels)).get("verb", "?")
            totals[verb] += int(float(value))
    return totals


def service_account_flow(metrics: str) -> int:
    total = 0
    for line in metrics.splitlines():
        if line.startswith("apiserver_flowcontrol_dispatched_requests_total{"):
            labels, _, value = line.rpartition(" ")
            if dict(LABEL.findall(labels)).get("flow_schema") == "service-accounts":
                total += int(float(value))
    return total


def audit_size(path: Path | None) -> int:
    return path.stat().st_size if path is not None and path.exists() else 0


def audit_all(path: Path, start: int, end: int) -> list[dict[str, Any]]:
    """Every audit event between two offsets of the log."""
    with path.open("rb") as handle:
        handle.seek(start)
        chunk = handle.read(end - start)
    return [json.loads(line) for line in chunk.splitlines()]


def audit_events(path: Path, start: int, end: int) -> list[dict[str, Any]]:
    """The operator's audit events between two offsets of the log."""
    return [
        event
        for event in audit_all(path, start, end)
        if event.get("user", {}).get("username") == IDENTITY
    ]


def resource_of(event: dict[str, Any]) -> str:
    ref = event.get("objectRef") or {}
    name = str(ref.get("resource") or event.get("requestURI", "?"))
    return f"{name}/{ref['subresource']}" if ref.get("subresource") else name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100, help="WebApps (default 100)")
    parser.add_argument("--minutes", type=float, default=2.0, help="each window (default 2)")
    parser.add_argument(
        "--settle", type=float, default=60.0, help="seconds at rest before measuring (default 60)"
    )
    add_cluster_args(parser)
    add_output_args(parser)
    args = parser.parse_args()
    window = args.minutes * 60
    audit: Path | None = None
    if args.kubeconfig is None:
        audit = EmbeddedCluster(args.cluster).audit_log
    with (
        bench_target(args, audit_policy=AUDIT_POLICY) as target,
        operator_running(target) as handle,
    ):
        if audit is not None and not audit.exists():
            print(f"no audit log at {audit} (cluster made without the policy): metrics only")
            audit = None
        api = target.api_client()
        info = operator_info(handle)
        namespace = new_namespace(api, "bench-requests")
        webapps = [
            make_webapp(f"app-{i:04d}", replicas=1, image=f"web:v{i % 7}")
            for i in range(args.count)
        ]
        retries = apply_webapps(api, namespace, webapps)
        if retries:
            print(f"{retries} WebApp applies retried (the webhook call timed out)")
        wait_for(
            lambda: running_webapps(api, namespace) == len(webapps),
            timeout=900,
            what="every WebApp Running",
            poll=1.0,
        )
        print(
            f"cpus {os.cpu_count()}, {args.count} WebApps Running; settling {args.settle:.0f} s, "
            f"then two windows of {window:.0f} s (operator running, operator stopped)"
        )
        time.sleep(args.settle)

        before_counts = counters(health(info))
        m0, a0 = scrape(api), audit_size(audit)
        time.sleep(window)
        m1, a1 = scrape(api), audit_size(audit)
        in_window = counted(before_counts, counters(health(info)))
        events = audit_events(audit, a0, a1) if audit is not None else []

        stop_operator(target)
        time.sleep(15)  # its watches close (each counted once, as it ends) before the baseline
        m2 = scrape(api)
        time.sleep(window)
        m3 = scrape(api)
        running = by_verb(m1) - by_verb(m0)
        idle = by_verb(m3) - by_verb(m2)
        flow = service_account_flow(m1) - service_account_flow(m0)
        try:
            summarise(args, events, audit is not None, running, idle, flow, in_window)
        finally:
            delete_namespace_without_operator(api, namespace)


def summarise(
    args: argparse.Namespace,
    events: list[dict[str, Any]],
    audited_run: bool,
    running: Counter[str],
    idle: Counter[str],
    flow: int,
    in_window: dict[str, int],
) -> None:
    per = args.count * args.minutes
    audited: Counter[str] = Counter(AUDIT_VERBS.get(e.get("verb", ""), "?") for e in events)
    verbs = [v for v in VERBS if running[v] or idle[v] or audited[v]]
    verbs += sorted({*running, *idle, *audited} - set(VERBS))
    rows = []
    for verb in [*verbs, "total"]:
        if verb == "total":
            r, i, a = sum(running.values()), sum(idle.values()), sum(audited.values())
        else:
            r, i, a = running[verb], idle[verb], audited[verb]
        rows.append([verb, a / per if audited_run else "", (r - i) / per, a, r, i])
    report(
        f"API requests per WebApp per minute at rest ({args.count} WebApps, "
        f"{args.minutes:g} min windows)",
        rows,
        [
            "verb",
            "operator (audit)",
            "operator (metrics diff)",
            "audit count",
            "metrics, operator running",
            "metrics, operator stopped",
        ],
    )
    by_resource = Counter((AUDIT_VERBS.get(e.get("verb", ""), "?"), resource_of(e)) for e in events)
    if by_resource:
        report(
            "the operator's requests by verb and resource (audit), per minute",
            [[v, res, n / args.minutes] for (v, res), n in by_resource.most_common()],
            ["verb", "resource", "per minute"],
        )
    reconciles = in_window["reconciles"]
    print(
        f"\nservice-accounts flow schema (the operator's token): {flow} requests "
        f"({flow / per:.2f} per WebApp per minute); reconciles in the window: {reconciles} "
        f"({reconciles / per:.2f} per WebApp per minute), failures "
        f"{in_window['failures']}"
    )
    write_json(
        args.json,
        {
            "count": args.count,
            "minutes": args.minutes,
            "audit": dict(audited) if audited_run else None,
            "metrics_running": dict(running),
            "metrics_stopped": dict(idle),
            "per_webapp_per_minute_audit": (
                {v: audited[v] / per for v in audited} if audited_run else None
            ),
            "per_webapp_per_minute_metrics": {v: (running[v] - idle[v]) / per for v in verbs},
            "service_accounts_flow": flow,
            "reconciles": reconciles,
        },
    )


def delete_namespace_without_operator(api: client.ApiClient, namespace: str) -> None:
    """The operator is stopped: the namespace is deleted and the WebApps' finalizers are taken
    off once they are being deleted (then the stopped operator's webhook is not called)."""
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    core.delete_namespace(namespace)

    def gone() -> bool:
        items = custom.list_namespaced_custom_object(API_GROUP, API_VERSION, namespace, PLURAL)
        for item in items["items"]:
            meta = item["metadata"]
            if meta.get("deletionTimestamp") and meta.get("finalizers"):
                with contextlib.suppress(client.ApiException):
                    custom.patch_namespaced_custom_object(
                        API_GROUP,
                        API_VERSION,
                        namespace,
                        PLURAL,
                        meta["name"],
                        [{"op": "remove", "path": "/metadata/finalizers"}],
                        _content_type="application/json-patch+json",
                    )
        return namespace not in {n.metadata.name for n in core.list_namespace().items}

    wait_for(gone, timeout=300, what=f"namespace {namespace} deleted", poll=1.0)


if __name__ == "__main__":
    main()
