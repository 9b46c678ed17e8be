"""Waiting until a deployment's desired state holds.

The verdict is the judge's (`compare.judge`): the same closed-world rule the trials, the
chaostoolkit probes and `compare status` use. Every API call has a request timeout; a wait
can be cut short by a cancel event (Ctrl-C in a run) and is interruptible in the main thread.
"""

from __future__ import annotations

import threading

from kubernetes import client

from compare.errors import CompareError
from compare.judge import DesiredObjects, wait_until_holds
from compare.kube import Deadline, WaitCancelled

# How many of the differences an error names.
SHOWN = 4


def wait_for_desired_state(
    api: client.ApiClient,
    namespace: str,
    desired: DesiredObjects,
    *,
    timeout: float,
    started: float | None = None,
    what: str = "WebApp",
    cancel: threading.Event | None = None,
) -> None:
    """Block until the desired state holds (rollout complete), or raise a one-line error
    naming the first thing that still differs. Watches; a cancel event cuts it short.
    `timeout` counts from `started` (default now; the error names the whole budget), with a
    last look of at least a second when it is nearly spent."""
    name = desired.deployment.name if desired.deployment is not None else namespace
    left = Deadline(timeout, started=started).remaining(1.0)
    try:
        found = wait_until_holds(api, namespace, desired, timeout=left, cancel=cancel)
    except InterruptedError:
        raise WaitCancelled(f"{what} {namespace}/{name}: cancelled") from None
    except client.ApiException as exc:
        raise CompareError(
            f"reading namespace {namespace} failed: {exc.status} {exc.reason}"
        ) from exc
    if found:
        # Every difference (a few at most): a diagnosis, not just the first symptom.
        shown = "; ".join(found[:SHOWN])
        more = f" (+{len(found) - SHOWN} more)" if len(found) > SHOWN else ""
        raise CompareError(
            f"{what} {namespace}/{name} did not reach its desired state within "
            f"{timeout:.0f}s: {shown}{more}",
            exit_code=1,
        )
