"""`operator_left_as_found`: an operator these tests start is stopped when the package is done.

`compare run` starts the shared local operator when it is not running (install_operator); a
kept test cluster must not keep an operator process the tests left behind. Every WebApp the
tests made is gone by then (each trial and test removes its CR first).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from compare.approaches.operator.controllers import operator_status, stop_operator
from compare.cluster import ClusterTarget


@pytest.fixture(scope="package")
def operator_left_as_found(cluster: ClusterTarget) -> Iterator[None]:
    before = operator_status(cluster)
    was_running = before is not None and before.running
    yield
    after = operator_status(cluster)
    if not was_running and after is not None and after.running:
        stop_operator(cluster)
