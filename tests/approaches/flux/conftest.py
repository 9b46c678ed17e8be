"""The Flux tests share the session's cluster; its Flux processes stop with it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from compare.approaches.flux.controllers import FLUX
from compare.cluster import ClusterTarget


@pytest.fixture(scope="session", autouse=True)
def flux_cleanup(cluster: ClusterTarget) -> Iterator[None]:
    """Stop the controllers and the chart server at the end (before the cluster goes)."""
    yield
    if not os.environ.get("COMPARE_KEEP_CLUSTER"):
        FLUX.forget(cluster)
