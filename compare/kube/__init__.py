"""The Kubernetes API mechanics every layer above shares, in one place: apply, read, delete,
wait, namespaces (in the spirit of fluxcd/pkg's `ssa` ResourceManager).

  apierror   the API server's own words from a failed call; 404 as an answer
  served     any kind by discovery: server-side apply, read, delete, count (request timeouts)
  wait       the one deadline loop: wait_for(condition), wait_until_gone, cancellation
  namespace  the DNS-label rule for names; ensure_namespace
  events     a watch of one object's Events, each stamped with its arrival (EventWatch)
  deadline   default timeouts and a total deadline for every request of an ApiClient (bound)
  managed    who owns a field (managedFields), Kubernetes' own field managers (pure)

Nothing here knows about WebApps, charts, approaches or clusters' processes: it imports only
`compare.errors`, `compare.lazy` and the kubernetes client, so every other package may use it.

Each name is imported from its module on first use (PEP 562): `wait` needs no kubernetes
client, and `compare cluster up` starts faster without one (the client takes ~0.2 s to import).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from compare.lazy import lazy_names

if TYPE_CHECKING:
    from compare.kube.apierror import status_message
    from compare.kube.namespace import (
        DNS_LABEL,
        check_namespace_name,
        delete_namespace,
        ensure_namespace,
        is_dns_label,
        terminating,
    )
    from compare.kube.served import Served
    from compare.kube.wait import (
        POLL_S,
        Deadline,
        WaitCancelled,
        poll,
        sleep_unless_cancelled,
        wait_for,
        wait_until_gone,
    )

# Where each name lives (imported on first use).
_WHERE = {
    "status_message": "apierror",
    "DNS_LABEL": "namespace",
    "check_namespace_name": "namespace",
    "delete_namespace": "namespace",
    "ensure_namespace": "namespace",
    "is_dns_label": "namespace",
    "terminating": "namespace",
    "Served": "served",
    "Deadline": "wait",
    "POLL_S": "wait",
    "WaitCancelled": "wait",
    "poll": "wait",
    "sleep_unless_cancelled": "wait",
    "wait_for": "wait",
    "wait_until_gone": "wait",
}

__all__ = [
    "DNS_LABEL",
    "POLL_S",
    "Deadline",
    "Served",
    "WaitCancelled",
    "check_namespace_name",
    "delete_namespace",
    "ensure_namespace",
    "is_dns_label",
    "poll",
    "sleep_unless_cancelled",
    "status_message",
    "terminating",
    "wait_for",
    "wait_until_gone",
]


__getattr__ = lazy_names(__name__, _WHERE)
