"""The API server's own words from a failed call: the `message` of its Status body."""

from __future__ import annotations

import json

from kubernetes import client


def status_message(exc: client.ApiException) -> str | None:
    """The Status `message` of the error response on one line, or None when it has none."""
    try:
        status = json.loads(exc.body) if exc.body else None
    except (TypeError, ValueError):
        return None
    message = status.get("message") if isinstance(status, dict) else None
    text = " ".join(str(message or "").split())
    return text or None
