"""The reconcile: read the WebApp, converge its Deployment and Service, write its status.

Level-triggered and idempotent, like the seed's `Reconcile`: whatever woke it up (a WebApp
change, any event of a child, the periodic resync), it compares the whole desired state with
the whole live state and acts only on differences. Each child goes through the same steps:

  1. read it; absent -> server-side apply creates it (event "Created");
  2. entries someone else added to a collection the operator owns whole are removed with a
     guarded JSON patch (server-side apply never removes fields it does not own);
  3. owned fields that differ are restored by server-side apply, field manager
     "webapp-operator", force (event "DriftCorrected" naming the fields, or "Updated" when
     the WebApp's spec moved since the child was last converged);

then the status is computed from the live Deployment and written only when it changed.
This module is synchronous and knows nothing of kopf: the handlers run it in a thread and turn
its `Outcome` into Kubernetes Events and kopf retries.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from kubernetes import client
from pydantic import ValidationError

from compare.webapp import WebApp
from compare.webapp.load import format_validation_error
from webapp_operator.builders import build_deployment, build_service, owner_reference
from webapp_operator.drift import correction_patch, foreign_additions, owned_differences
from webapp_operator.names import (
    API_GROUP,
    API_VERSION,
    FIELD_MANAGER,
    GENERATION_ANNOTATION,
    KIND,
    PLURAL,
)
from webapp_operator.registry import Registry
from webapp_operator.status import Failure, compute_status
from webapp_operator.types import Phase

__all__ = ["Change", "Outcome", "ReconcileError", "Reconciler"]

APPLY = "application/apply-patch+yaml"
JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
# A hung request must not hold a reconcile (and its WebApp) forever.
REQUEST_TIMEOUT_S = 30.0
# Child kind -> (client API class, method suffix).
_CHILD_APIS = {
    "Deployment": (client.AppsV1Api, "namespaced_deployment"),
    "Service": (client.CoreV1Api, "namespaced_service"),
}


@dataclass(frozen=True)
class Change:
    """One child the reconcile created or corrected: what the measurement events report."""

    reason: str  # "Created" | "DriftCorrected" | "Updated" (the spec moved)
    kind: str
    namespace: str
    name: str
    fields: tuple[str, ...] = ()

    @property
    def message(self) -> str:
        what = f"{self.kind} {self.namespace}/{self.name}"
        if self.reason == "Created":
            return f"created {what}"
        verb = "updated" if self.reason == "Updated" else "corrected"
        return f"{verb} {what}: {', '.join(self.fields) or 'metadata only'}"


@dataclass(frozen=True)
class Outcome:
    """What one reconcile did and found."""

    found: bool = True  # False: the WebApp is gone, nothing to do
    changes: tuple[Change, ...] = ()
    status_written: bool = False
    failure: Failure | None = None
    retry: bool = False  # the failure is transient: try again, with backoff
    generation: int = 0


class ReconcileError(Exception):
    """A step failed; `reason` becomes the Degraded condition's reason."""

    def __init__(self, reason: str, message: str, *, retry: bool = True) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.retry = retry

    def failure(self) -> Failure:
        return Failure(self.reason, self.message)


def _causes(exc: client.ApiException) -> list[Any]:
    try:
        causes: list[Any] = (json.loads(exc.body or "{}").get("details") or {}).get("causes") or []
    except (ValueError, AttributeError):
        return []
    return causes


def api_error(exc: client.ApiException) -> str:
    """The API server's own message when it sent a Status, else the HTTP reason."""
    try:
        message = json.loads(exc.body or "{}").get("message")
    except (ValueError, AttributeError):
        message = None
    return f"{exc.status} {message or exc.reason}"


def _stamp_changed(fields: tuple[str, ...] | list[str]) -> bool:
    return any(f.endswith(GENERATION_ANNOTATION) for f in fields)


class Reconciler:
    """Converges WebApps; one instance is shared by every reconcile thread."""

    def __init__(
        self,
        api: client.ApiClient,
        registry: Registry,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self._api = api
        self._custom = client.CustomObjectsApi(api)
        self._registry = registry
        self._clock = clock

    def reconcile(self, namespace: str, name: str) -> Outcome:
        body = self._read_webapp(namespace, name)
        if body is None or body["metadata"].get("deletionTimestamp"):
            # Gone, or being deleted: the finalizer handler owns the rest of its life.
            return Outcome(found=body is not None)
        live: dict[str, dict[str, Any] | None] = {}
        changes: list[Change] = []
        failure: ReconcileError | None = None
        try:
            webapp = self._parse(body)
            self._call(
                "RegistryFailed",
                f"recording {namespace}/{name} in the registry",
                self._registry.record,
                namespace,
                name,
                body["metadata"]["uid"],
            )
            owner = owner_reference(body)
            generation = str(body["metadata"].get("generation") or 0)
            for desired in (
                build_deployment(webapp, namespace, owner),
                build_service(webapp, namespace, owner),
            ):
                desired["metadata"]["annotations"] = {GENERATION_ANNOTATION: generation}
                change = self._converge(desired, live)
                if change is not None:
                    changes.append(change)
        except ReconcileError as exc:
            failure = exc
        status = compute_status(
            body,
            live.get("Deployment"),
            failure=failure.failure() if failure else None,
            now=self._clock(),
        )
        try:
            written = self._write_status(body, status)
        except ReconcileError as exc:
            failure, written = failure or exc, False
        return Outcome(
            changes=tuple(changes),
            status_written=written,
            failure=failure.failure() if failure else None,
            retry=failure.retry if failure else False,
            generation=body["metadata"].get("generation") or 0,
        )

    @staticmethod
    def _parse(body: Mapping[str, Any]) -> WebApp:
        meta = body["metadata"]
        try:
            return WebApp.model_validate(
                {
                    "apiVersion": body.get("apiVersion"),
                    "kind": body.get("kind"),
                    "metadata": {"name": meta["name"], "namespace": meta.get("namespace")},
                    "spec": body.get("spec") or {},
                }
            )
        except ValidationError as exc:
            # Retrying cannot fix a spec; the next edit of the WebApp wakes the reconcile.
            msg = format_validation_error(exc)
            raise ReconcileError("InvalidSpec", f"spec.{msg}", retry=False) from None

    # -- one child -----------------------------------------------------------------------------

    def _converge(
        self, desired: dict[str, Any], live: dict[str, dict[str, Any] | None]
    ) -> Change | None:
        """Bring one child to its desired state; `live` receives what the API server holds."""
        kind, meta = desired["kind"], desired["metadata"]
        namespace, name = meta["namespace"], meta["name"]
        where = f"{kind} {namespace}/{name}"
        api_class, suffix = _CHILD_APIS[kind]
        api = api_class(self._api)
        read, patch = getattr(api, f"read_{suffix}"), getattr(api, f"patch_{suffix}")

        def apply(action: str) -> dict[str, Any]:
            return self._json(
                "ApplyFailed",
                f"{action} {where}",
                patch,
                name,
                namespace,
                desired,
                field_manager=FIELD_MANAGER,
                force=True,
                _content_type=APPLY,
            )

        current = self._json("ReadFailed", f"reading {where}", read, name, namespace, missing=True)
        if current is None:
            live[kind] = apply("creating")
            return Change("Created", kind, namespace, name)
        live[kind] = current
        fields = owned_differences(desired, current)
        foreign = foreign_additions(desired, current)
        if foreign:
            live[kind] = current = self._remove_foreign(patch, desired, current, where)
        if owned_differences(desired, current):
            live[kind] = apply("applying")
        if not fields and not foreign:
            return None
        removed = tuple(f"-{entry.field}" for entry in foreign)
        # The generation stamp differs when the spec moved since the last convergence: then
        # the change is an update, not a correction of drift.
        reason = "Updated" if _stamp_changed(fields) else "DriftCorrected"
        changed = tuple(f for f in fields if not f.endswith(GENERATION_ANNOTATION))
        return Change(reason, kind, namespace, name, (*changed, *removed))

    def _remove_foreign(
        self,
        patch: Callable[..., Any],
        desired: dict[str, Any],
        current: dict[str, Any],
        where: str,
    ) -> dict[str, Any]:
        meta = desired["metadata"]
        try:
            raw = patch(
                meta["name"],
                meta["namespace"],
                correction_patch(desired, current),
                field_manager=FIELD_MANAGER,
                _content_type=JSON_PATCH,
                _preload_content=False,
                _request_timeout=REQUEST_TIMEOUT_S,
            )
        except client.ApiException as exc:
            if exc.status == 422 and not _causes(exc):
                # A failed `test` is a bare 422 (validation errors list their causes): someone
                # changed the object since it was read.
                raise ReconcileError(
                    "Conflict", f"{where} changed while being corrected; retrying"
                ) from None
            raise ReconcileError(
                "PatchFailed", f"removing what others added to {where}: {api_error(exc)}"
            ) from None
        result: dict[str, Any] = json.loads(raw.data)
        return result

    # -- API calls -----------------------------------------------------------------------------

    @staticmethod
    def _call(reason: str, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except client.ApiException as exc:
            raise ReconcileError(reason, f"{what}: {api_error(exc)}") from None

    def _json(
        self,
        reason: str,
        what: str,
        fn: Callable[..., Any],
        *args: Any,
        missing: bool = False,
        **kwargs: Any,
    ) -> Any:
        """One API call returning the raw API JSON; with `missing`, a 404 returns None."""
        try:
            raw = fn(*args, _preload_content=False, _request_timeout=REQUEST_TIMEOUT_S, **kwargs)
        except client.ApiException as exc:
            if missing and exc.status == 404:
                return None
            raise ReconcileError(reason, f"{what}: {api_error(exc)}") from None
        return json.loads(raw.data)

    def _read_webapp(self, namespace: str, name: str) -> dict[str, Any] | None:
        body: dict[str, Any] | None = self._json(
            "ReadFailed",
            f"reading {KIND} {namespace}/{name}",
            self._custom.get_namespaced_custom_object,
            API_GROUP,
            API_VERSION,
            namespace,
            PLURAL,
            name,
            missing=True,
        )
        return body

    def _write_status(self, body: Mapping[str, Any], status: dict[str, Any]) -> bool:
        """Patch the status subresource, only when it differs from what is stored."""
        if body.get("status") == status:
            return False
        self._patch_status(body["metadata"]["namespace"], body["metadata"]["name"], status)
        return True

    def _patch_status(self, namespace: str, name: str, status: Mapping[str, Any]) -> None:
        self._json(
            "StatusFailed",
            f"writing the status of {namespace}/{name}",
            self._custom.patch_namespaced_custom_object_status,
            API_GROUP,
            API_VERSION,
            namespace,
            PLURAL,
            name,
            {"status": status},
            field_manager=FIELD_MANAGER,
            _content_type=MERGE_PATCH,
        )

    # -- deletion ----------------------------------------------------------------------------

    def cleanup(self, namespace: str, name: str, uid: str) -> bool:
        """The finalizer's work: phase Deleting, then the registry entry goes.

        The Deployment and Service are not deleted here: their owner references hand them to
        the garbage collector once the finalizer is removed. True when an entry was removed.
        """
        self._patch_status(namespace, name, {"phase": Phase.DELETING.value})
        removed: bool = self._call(
            "CleanupFailed",
            f"removing {namespace}/{name} from the registry",
            self._registry.remove,
            namespace,
            name,
            uid,
        )
        return removed
