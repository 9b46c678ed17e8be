"""An injection that returns at once and changes nothing is `no-fault`, never an `error`.

The watch delivers nothing after such an injection (nothing changed), and the observer's last
re-read may land after the trial's time on a loaded machine (2 cores, load 11): it is not the
trial's end state then, and the trial had no reading after the injection at all ("no reading
after the injection started"). The observer takes a fresh reading when its watch has none.
"""

from __future__ import annotations

import threading
import time

import pytest
from kubernetes import client

from compare.judge import as_given
from compare.run.evidence import Observation, TrialJudge, measure
from compare.run.observe import Observer, fresh_reading_due


def _obs(at: float) -> Observation:
    return Observation(at=at, problems=(), value=None, uids={}, ready=0)


def test_a_fresh_reading_is_due_only_when_the_watch_has_none_since_the_injection() -> None:
    # Not injected yet, or already taken: none.
    assert fresh_reading_due([], None, None, taken=False) is None
    assert fresh_reading_due([], 10.0, 11.0, taken=True) is None
    # Only readings from before the injection: one is due once the watch may have caught up.
    due = fresh_reading_due([_obs(9.0)], 10.0, 11.0, taken=False)
    assert due is not None and due > 11.0
    # An event after the injection started is a reading of it: nothing to take.
    assert fresh_reading_due([_obs(9.0), _obs(10.5)], 10.0, 11.0, taken=False) is None


@pytest.mark.cluster
def test_an_injection_that_changes_nothing_is_no_fault_when_the_last_read_is_late(
    api: client.ApiClient, namespace: str
) -> None:
    core = client.CoreV1Api(api)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "app"}}
    body["data"] = {"k": "v"}
    core.create_namespaced_config_map(namespace, body)
    live = client.ApiClient().sanitize_for_serialization(
        core.read_namespaced_config_map("app", namespace)
    )
    desired = as_given([{**live, "apiVersion": "v1", "kind": "ConfigMap"}])
    # A heal window that is over before the last re-read can end: that read is after the
    # trial's time, as under load, so the watch alone would leave no reading after the
    # injection.
    observer = Observer(
        api,
        namespace,
        window=0.01,
        settle=0.0,
        recheck=60.0,
        cancel=threading.Event(),
        kinds=desired.kinds,
    )
    judge = observer.begin(
        lambda baseline: TrialJudge(desired, "configmap", "configmap.data", baseline)
    )
    started = time.time()
    # The injection: a patch that stores what is there already (no new resourceVersion, no
    # event).
    core.patch_namespaced_config_map("app", namespace, {"data": {"k": "v"}})
    ended = time.time()
    observer.injected(started, ended)
    observer.experiment_over()
    observer.finish(timeout=30.0)
    assert observer.error is None
    measurement = measure(
        judge,
        observer.observations,
        injection_started=started,
        injected_at=ended,
        window=0.01,
        settle=0.0,
        observed_until=observer.observed_until,
    )
    assert measurement.status == "no-fault"
    assert measurement.readings >= 1
