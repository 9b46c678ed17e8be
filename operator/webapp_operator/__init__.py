"""The WebApp operator (kopf): reconcile, status, finalizer, webhook, leader election.

Layers, lowest first; a module imports only from the layers below it:

- the API and its pure derivations, no I/O: `names` (every name written into a cluster, the
  exit codes), `types` (the status model; the spec is `compare.webapp`'s), `crd`, `rbac`,
  `admission` (the webhook's rules and configuration), `builders` (desired Deployment/Service),
  `status`, `certs`, `compact` (what is kept per WebApp, as compressed JSON); what "drifted"
  means and how to heal it is the toolkit judge's (`compare.judge`: `diff_object`,
  `restoring_body`), one definition for the operator and the measurements;
- talking to the API server, synchronously and without kopf: `kube`, `registry` (the
  ConfigMap the finalizer cleans up), `reconciler` (one reconcile), `leader` (the Lease);
- the process: `handlers` (the kopf wiring), `settings` (kopf's), `health`, `memory` (freed
  heap pages back to the system), `transport` (a connection kept open while idle), both
  `periodic` threads, `config` (the command line), `manager` (standby / leader /
  webhook-only), `__main__`;
- `manifests`: the generator of everything under operator/config (`make manifests`).

Run it with `python -m webapp_operator`; the local runner is
`compare.approaches.operator.controllers`.
This top level re-exports the pure parts only, so importing it does not import kopf.
"""

from webapp_operator.builders import build_deployment, build_service, owner_reference
from webapp_operator.crd import build_crd
from webapp_operator.status import compute_status
from webapp_operator.types import Condition, ConditionType, Phase, WebAppStatus

__all__ = [
    "Condition",
    "ConditionType",
    "Phase",
    "WebAppStatus",
    "build_crd",
    "build_deployment",
    "build_service",
    "compute_status",
    "owner_reference",
]
