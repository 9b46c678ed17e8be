"""The API server's own words from a failed call, and "not found" as an answer rather than an
error."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from kubernetes import client

from compare.errors import CompareError

_MISSING = object()


def status_message(exc: client.ApiException) -> str | None:
    """The Status `message` of the error response on one line, or None when it has none."""
    try:
        status = json.loads(exc.body) if exc.body else None
    except (TypeError, ValueError):
        return None
    message = status.get("message") if isinstance(status, dict) else None
    text = " ".join(str(message or "").split())
    return text or None


def _unless_missing(what: str, call: Callable[..., Any], args: Any, kwargs: Any) -> Any:
    try:
        return call(*args, **kwargs)
    except client.ApiException as exc:
        if exc.status == 404:
            return _MISSING
        raise CompareError(f"{what}: {exc.status} {exc.reason}") from None


def if_found(what: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`call(*args, **kwargs)`'s answer, or None when the API server says 404 (no such object,
    or no such kind: its CRD is not installed). Any other refusal is a one-line CompareError,
    `<what>: <status> <reason>`."""
    found = _unless_missing(what, call, args, kwargs)
    return None if found is _MISSING else found


def delete_if_found(what: str, call: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
    """`call(*args, **kwargs)` (a delete); False when there was nothing to delete (404). Any
    other refusal is a one-line CompareError, `<what>: <status> <reason>`."""
    return _unless_missing(what, call, args, kwargs) is not _MISSING
