"""Finalizers nobody will remove must not keep a trial's namespace forever.

A fault may put a foreign finalizer on an object (then delete it: "stuck terminating"); no
controller will ever remove it, so the object - and the namespace deleted around it - would
stay terminating for good. Before a trial's namespace is deleted, every finalizer on its
objects that no controller of the cluster processes is removed; the system's own (`kubernetes.io/*`,
the garbage collector's `foregroundDeletion` and `orphan`) are left to their controllers.
What was released is returned (for the log); what could not be is a one-line error naming the
objects and their namespace, so the run says what is left and where.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from kubernetes import client

from compare.errors import CompareError, first_line
from compare.judge.kinds import KINDS, REQUEST_TIMEOUT, kind
from compare.judge.reading import list_raw
from compare.judge.rest import request

log = logging.getLogger(__name__)
SYSTEM_FINALIZERS = ("foregroundDeletion", "orphan")


def system_finalizer(name: str) -> bool:
    """The garbage collector's, or one of a Kubernetes controller (`kubernetes.io/...`,
    `<x>.kubernetes.io/...`: PVC protection, Job tracking, load-balancer cleanup)."""
    domain = name.split("/", 1)[0] if "/" in name else ""
    return (
        name in SYSTEM_FINALIZERS or domain == "kubernetes.io" or domain.endswith(".kubernetes.io")
    )


def release_finalizers(
    api: client.ApiClient, namespace: str, kinds: Sequence[str] | None = None
) -> list[str]:
    """Remove the non-system finalizers of every object of `kinds` (default: every namespaced
    kind the judge knows) in the namespace; returns `Kind/name: finalizer, ...` per object."""
    names = kinds if kinds is not None else [k for k, row in KINDS.items() if row.namespaced]
    released, failed = [], []
    for kind_name in names:
        try:
            items = list_raw(api, namespace, kind_name).get("items") or []
        except client.ApiException as exc:
            if exc.status in (403, 404):
                continue  # a kind this cluster does not serve, or we may not list
            raise
        for item in items:
            meta = item.get("metadata") or {}
            held = list(meta.get("finalizers") or [])
            foreign = [f for f in held if not system_finalizer(f)]
            if not foreign:
                continue
            what = f"{kind_name}/{meta.get('name')}: {', '.join(foreign)}"
            keep = [f for f in held if system_finalizer(f)]
            try:
                request(
                    api,
                    "PATCH",
                    kind(kind_name).path(namespace, str(meta.get("name"))),
                    body={"metadata": {"finalizers": keep or None}},
                    content_type="application/merge-patch+json",
                    timeout=REQUEST_TIMEOUT,
                )
            except client.ApiException as exc:
                if exc.status != 404:
                    failed.append(f"{what} ({first_line(exc)})")
                continue
            released.append(what)
    if released:
        log.info("namespace %s: released finalizers %s", namespace, "; ".join(released))
    if failed:
        raise CompareError(
            f"namespace {namespace} stays terminating until these finalizers are removed:"
            f" {'; '.join(failed)}"
        )
    return released
