"""Namespaces: the one DNS-label rule for their names (and every other label-like name) and
the one way to make sure a namespace exists."""

from __future__ import annotations

import re
from typing import Any

from kubernetes import client

from compare.errors import EXIT_FAILED, CompareError
from compare.kube.apierror import delete_if_found, if_found, status_message
from compare.kube.wait import wait_until_gone

# RFC 1123 label, as the API server checks namespace names; length is checked apart (63).
DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_LABEL_MAX = 63
_DNS_LABEL = re.compile(DNS_LABEL)
# A namespace takes its finalizers' time to go: no need to ask more often.
GONE_POLL_S = 0.25


def is_dns_label(name: str) -> bool:
    return len(name) <= DNS_LABEL_MAX and _DNS_LABEL.match(name) is not None


def check_namespace_name(namespace: str) -> None:
    """A one-line CompareError (usage) unless `namespace` can name a namespace."""
    if not is_dns_label(namespace):
        raise CompareError(
            f"namespace {namespace!r}: must be a DNS label (lower-case letters, digits, '-')"
            f" of at most {DNS_LABEL_MAX} characters"
        )


def ensure_namespace(
    api: client.ApiClient,
    namespace: str,
    *,
    labels: dict[str, str] | None = None,
    annotations: dict[str, str] | None = None,
    exists_ok: bool = True,
    exit_code: int = EXIT_FAILED,
) -> bool:
    """Create the namespace; True when created here, False when it was there already.

    With `exists_ok=False` a namespace that exists is the API server's 409, raised as it is
    (a run's own namespace must be new). Any other refusal is one line: `creating namespace
    <name>: <the API server's message>`."""
    metadata: dict[str, object] = {"name": namespace}
    if labels:
        metadata["labels"] = dict(labels)
    if annotations:
        metadata["annotations"] = dict(annotations)
    body = {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}
    try:
        client.CoreV1Api(api).create_namespace(body)
    except client.ApiException as exc:
        if exc.status == 409:
            if exists_ok:
                return False
            raise
        message = status_message(exc) or f"{exc.status} {exc.reason}"
        raise CompareError(
            f"creating namespace {namespace}: {message}", exit_code=exit_code
        ) from None
    return True


def delete_namespace(
    api: client.ApiClient, namespace: str, *, timeout: float | None = None
) -> bool:
    """Delete the namespace (in the background: the garbage collector takes what it holds);
    False when there was none. With `timeout`, wait until it is gone (its finalizers ran);
    past it, one line: `namespace <name> still terminating after <timeout>s`."""
    core = client.CoreV1Api(api)
    if not delete_if_found(
        f"deleting namespace {namespace}",
        core.delete_namespace,
        namespace,
        propagation_policy="Background",
    ):
        return False
    if timeout is not None:

        def left() -> list[str]:
            found = if_found(
                f"reading namespace {namespace} failed", core.read_namespace, namespace
            )
            return [] if found is None else [namespace]

        wait_until_gone(
            left,
            deadline=timeout,
            timed_out=lambda _: CompareError(
                f"namespace {namespace} still terminating after {timeout:.0f}s"
            ),
            interval=GONE_POLL_S,
        )
    return True


def terminating(api: client.ApiClient, namespace: str | None = None) -> set[str]:
    """The namespaces being deleted (phase Terminating): `namespace` alone, or every one
    (those this user may read). Nothing can be created in them (403), and what they hold is
    going."""
    core = client.CoreV1Api(api)
    try:
        items = [core.read_namespace(namespace)] if namespace else core.list_namespace().items
    except client.ApiException as exc:
        if exc.status in (403, 404):
            return set()  # none to see (a user who may not read namespaces: none known)
        message = status_message(exc) or f"{exc.status} {exc.reason}"
        raise CompareError(f"reading namespaces failed: {message}") from None
    return {ns.metadata.name for ns in items if is_terminating(ns)}


def is_terminating(ns: Any) -> bool:
    """Whether a namespace (the typed client's V1Namespace) is being deleted."""
    return bool((ns.status and ns.status.phase == "Terminating") or ns.metadata.deletion_timestamp)
