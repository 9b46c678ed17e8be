"""The Argo CD tests share the session's cluster; its Argo CD processes stop with it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from compare.approaches.argocd.controllers import ARGOCD
from compare.cluster import ClusterTarget


@pytest.fixture(scope="session")
def argocd_cleanup(cluster: ClusterTarget) -> Iterator[None]:
    """Stop the controllers, Redis and the chart server at the end (before the cluster goes)."""
    yield
    if not os.environ.get("COMPARE_KEEP_CLUSTER"):
        ARGOCD.forget(cluster)
