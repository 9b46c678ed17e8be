"""Shared by the test packages: polling a condition with a deadline."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

POLL_S = 0.2


def wait_for(predicate: Callable[[], Any], timeout: float = 30.0) -> Any:
    """Poll `predicate` until it returns something truthy, and return that."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(POLL_S)
