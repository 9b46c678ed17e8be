"""When no operator reconciles a target's custom resource, a run says so within seconds and
still writes its results.json.

The Cache kind of tests/fixtures/operators/cache is served (its CRD applied), the target says
`alreadyInstalled`, and no operator runs: the preflight applies the Cache, nothing ever writes
its status, and the wait ends `NO_RECONCILE_S` later with one line naming it - not after the
whole deploy timeout with "not ready". The run's results.json records the preflight's error
and no trial.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client
from typer.testing import CliRunner

from compare.approaches.operator.arm import NO_RECONCILE_S, _condition, status_written
from compare.cli import app
from compare.cluster import ClusterTarget
from compare.errors import EXIT_FAILED
from compare.results import latest_run, load_results
from tests.helpers import eventually

from .cache_target import CRD, TARGET, _apply_crd, _served

runner = CliRunner()


@pytest.fixture
def cache_kind(api: client.ApiClient) -> Iterator[None]:
    """The Cache kind served, with no operator for it."""
    created = _apply_crd(api)
    eventually(lambda: _served(api), timeout=30, what="the Cache kind to be served")
    yield
    if created:
        client.ApiextensionsV1Api(api).delete_custom_resource_definition(CRD["metadata"]["name"])


@pytest.mark.cluster
def test_a_resource_no_operator_reconciles_is_said_within_seconds_and_results_are_written(
    cluster: ClusterTarget, cache_kind: None, tmp_path: Path
) -> None:
    out = tmp_path / "reports"
    started = time.monotonic()
    result = runner.invoke(
        app,
        [
            *("run", "--target", str(TARGET), "-e", "configmap-data-change"),
            *("--kubeconfig", str(cluster.kubeconfig), "--output", str(out)),
        ],
    )
    took = time.monotonic() - started
    assert result.exit_code == EXIT_FAILED, result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    assert "no operator is reconciling Cache cmp-preflight-op-" in errors[0]
    assert (
        f"/sessions (last write to its status: never; waited {NO_RECONCILE_S:.0f}s)" in errors[0]
    ), errors[0]
    assert took < 30, took
    results = load_results(latest_run(out))
    assert results.preflight_error is not None
    assert results.preflight_error.startswith("preflight of the operator arm: no operator is")
    assert results.trials == [] and not results.complete and results.finished_at is not None
    assert results.target is not None and results.target.name == "cache"
    assert f"results: {out}" in result.output


def test_a_missing_condition_names_the_conditions_the_resource_has() -> None:
    body: dict[str, Any] = {
        "metadata": {"generation": 1},
        "status": {"conditions": [{"type": "Progressing", "status": "True"}, {"type": "Degraded"}]},
    }
    assert _condition(body, "Ready") == "no Ready condition (its conditions: Degraded, Progressing)"
    assert _condition({"status": {}}, "Ready") == "no Ready condition yet"


def test_a_status_is_written_when_it_has_conditions_a_generation_or_a_status_write() -> None:
    assert not status_written({"metadata": {}, "spec": {}})
    assert not status_written({"metadata": {"managedFields": [{"manager": "kubectl"}]}})
    assert status_written({"status": {"observedGeneration": 1}})
    assert status_written({"status": {"conditions": [{"type": "Ready"}]}})
    assert status_written(
        {"metadata": {"managedFields": [{"manager": "op", "subresource": "status"}]}}
    )
