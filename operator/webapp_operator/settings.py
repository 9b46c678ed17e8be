"""kopf's settings for this operator, each one chosen for a reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, MutableMapping
from concurrent.futures import Executor
from typing import Any

import kopf

from webapp_operator.config import OperatorConfig
from webapp_operator.names import ANNOTATION_PREFIX, FINALIZER, MANAGED_BY_LABEL, OPERATOR_NAME
from webapp_operator.reconciler import REQUEST_TIMEOUT_S

__all__ = [
    "WORKER_IDLE_S",
    "NoDiffBase",
    "ProgressAnnotations",
    "drop_lone_marker",
    "operator_settings",
]

WORKER_IDLE_S = 1.0


class NoDiffBase(kopf.DiffBaseStorage):
    """A diff-base that stores nothing and sees every object as unchanged.

    kopf compares each event's "essence" with the one it stored at the last handled change,
    to call on.create/on.update/on.resume handlers. This operator has none of those (its
    daemon is level-triggered; on.delete is decided by the deletion timestamp, never by a
    diff), so the essence is always the same empty one: no annotation is written and no
    event is deep-copied.
    """

    def build(
        self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None
    ) -> kopf.BodyEssence:
        return kopf.BodyEssence()

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return kopf.BodyEssence()

    def store(self, *, body: kopf.Body, patch: kopf.Patch, essence: kopf.BodyEssence) -> None:
        return None


def drop_lone_marker(
    prefix: str, body_annotations: Mapping[str, Any], patch: MutableMapping[str, Any]
) -> None:
    """Take kopf's `PREFIX/kopf-managed` marker out of `patch` when no other annotation under
    `PREFIX` is left once the patch is applied.

    The marker tells other kopf-based operators that the prefix's annotations are kopf's
    bookkeeping, not the object's content. kopf adds it whenever it stores a handler's
    progress, and keeps it when the progress is purged in the same pass: the finalizer's one
    handler succeeding at once left a patch holding only the marker, a PATCH of every WebApp
    deleted (before the one that removes the finalizer) that marks nothing.
    """
    marker = f"{prefix}/kopf-managed"
    meta = patch.get("metadata")
    if not isinstance(meta, MutableMapping):
        return
    annotations = meta.get("annotations")
    if not isinstance(annotations, MutableMapping) or marker not in annotations:
        return
    ours = f"{prefix}/"
    left = {
        k for k in body_annotations if k.startswith(ours) and annotations.get(k, "") is not None
    }
    left |= {k for k, v in annotations.items() if k.startswith(ours) and v is not None}
    if left - {marker}:
        return
    del annotations[marker]
    if not annotations:
        del meta["annotations"]
    if not meta:
        del patch["metadata"]


class ProgressAnnotations(kopf.AnnotationsProgressStorage):
    """kopf's progress in annotations, without a marker that marks nothing (`drop_lone_marker`)."""

    def purge(self, *, key: Any, body: kopf.Body, patch: kopf.Patch) -> None:
        super().purge(key=key, body=body, patch=patch)
        drop_lone_marker(self.prefix, body.metadata.annotations, patch)


def operator_settings(
    config: OperatorConfig, identity: str, executor: Executor | None = None
) -> kopf.OperatorSettings:
    settings = kopf.OperatorSettings()
    # The seed's finalizer name; kopf adds it, runs @on.delete, then removes it.
    settings.persistence.finalizer = FINALIZER
    # kopf's bookkeeping stays in annotations under our prefix, never in the WebApp's status
    # (the status schema is ours and the API server would prune foreign fields anyway).
    settings.persistence.progress_storage = ProgressAnnotations(prefix=ANNOTATION_PREFIX)
    # No diff-base: nothing here reacts to what changed (the reconcile compares the whole
    # state), so kopf's `last-handled-configuration` annotation was one PATCH of every new
    # WebApp (and of every spec change) for nothing, and its deep copy of every watch event
    # of every resource was CPU on the event loop for nothing.
    settings.persistence.diffbase_storage = NoDiffBase()
    # Events are the measurement channel (Created / DriftCorrected / Updated / CleanedUp and a
    # Warning per failed step), posted explicitly with kopf.event(); log lines are not events.
    # No limit on posting workers (kopf's default): an event is posted when it happens, and its
    # eventTime (stamped when posted) is when it happened; a limit of 4 delayed them by seconds.
    settings.posting.enabled = True
    settings.posting.loggers = False
    settings.posting.reporting_component = OPERATOR_NAME
    settings.posting.reporting_instance = identity
    settings.posting.event_name_prefix = f"{OPERATOR_NAME}-"
    # One active replica is chosen by our Lease (leader.py), not by kopf's peering objects.
    settings.peering.standalone = True
    # The child watches see only the operator's own objects: a cluster's other Deployments and
    # Services cost no memory and no events. (An object someone strips of this label leaves
    # the watch as a deletion, which still wakes its WebApp's reconcile.)
    own = f"{MANAGED_BY_LABEL}={OPERATOR_NAME}"
    settings.watching.label_selectors["apps", "v1", "deployments"] = own
    settings.watching.label_selectors["v1", "services"] = own
    # The pods of the operator's Deployments carry the pod template's labels.
    settings.watching.label_selectors["v1", "pods"] = own
    # kopf runs one worker per object with events, kept for `idle_timeout` after its last
    # event with that event's body; its default (5 s) kept hundreds alive through a burst of
    # a thousand WebApps (31 MiB at one point). Respawning one costs a task.
    settings.queueing.idle_timeout = WORKER_IDLE_S
    # kopf's own requests (patches, events) must not hang for its default 5 minutes.
    settings.networking.request_timeout = REQUEST_TIMEOUT_S
    # Sync handlers (cleanup, validation) share the reconciles' thread pool.
    if executor is not None:
        settings.execution.executor = executor
    if config.webhook is not None:
        settings.admission.server = kopf.WebhookServer(
            addr=config.webhook.addr,
            port=config.webhook.port,
            host=config.webhook.host,
            certfile=str(config.webhook.cert_dir / "tls.crt"),
            pkeyfile=str(config.webhook.cert_dir / "tls.key"),
        )
        # The installer (or the chart) owns the ValidatingWebhookConfiguration: the operator
        # needs no RBAC on admissionregistration.
        settings.admission.managed = None
    return settings
