"""The Lease elector in-process against the real API server: compare-and-swap, expiry on the
candidate's own clock, release. (The process-level failover is in test_lifecycle.)"""

from __future__ import annotations

import time
import uuid

import pytest
from kubernetes import client

from webapp_operator.leader import LeaderElector, LeaseConfig

from .helpers import eventually, raw

pytestmark = pytest.mark.cluster


def _config(namespace: str, name: str, identity: str) -> LeaseConfig:
    return LeaseConfig(
        namespace, name, identity, duration=2.0, renew_deadline=1.5, retry_period=0.2
    )


def test_timings_are_checked() -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < duration"):
        LeaseConfig("ns", "l", "me", duration=5, renew_deadline=10, retry_period=1)


def test_one_holder_expiry_and_release(api: client.ApiClient, namespace: str) -> None:
    name = f"lease-{uuid.uuid4().hex[:6]}"
    a = LeaderElector(api, _config(namespace, name, "a"))
    b = LeaderElector(api, _config(namespace, name, "b"))

    assert a.try_acquire_or_renew()  # creates the Lease
    assert not b.try_acquire_or_renew()  # held and fresh
    assert a.try_acquire_or_renew()  # renewal
    lease = raw(client.CoordinationV1Api(api).read_namespaced_lease, name, namespace)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 2

    # a stops renewing (as if killed): b takes over once it saw no change for a full duration.
    started = time.monotonic()
    eventually(b.try_acquire_or_renew, timeout=5, what="b to take the expired lease")
    assert time.monotonic() - started >= 2.0 - 0.25
    lease = raw(client.CoordinationV1Api(api).read_namespaced_lease, name, namespace)
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()

    # A graceful release frees it at once.
    b.leading = True
    assert b.release()
    assert a.try_acquire_or_renew()
