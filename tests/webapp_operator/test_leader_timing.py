"""The leader election's timing rules and the fence, without a cluster: the request timeout,
expiry, when the leader must wake up, how long a deposed leader gives kopf, and the bounded
wait for in-flight reconciles on shutdown."""

from __future__ import annotations

import asyncio
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest
from kubernetes import client

from webapp_operator.leader import (
    FencedApiClient,
    LeaderElector,
    LeaseConfig,
    NotLeading,
    default_request_timeout,
    finish_in_flight,
    lease_expired,
    renew_delay,
)


def test_timings_are_checked() -> None:
    with pytest.raises(ValueError, match="retry period < renew deadline < duration"):
        LeaseConfig("ns", "l", "me", duration=5, renew_deadline=10, retry_period=1)
    with pytest.raises(ValueError, match="request timeout must be within the renew deadline"):
        LeaseConfig("ns", "l", "me", duration=15, renew_deadline=10, request_timeout=11)


def test_request_timeout_is_bounded_by_the_renew_deadline() -> None:
    assert default_request_timeout(10.0) == 5.0  # half (client-go's choice)
    assert default_request_timeout(1.5) == 1.0  # at least a second...
    assert default_request_timeout(0.8) == 0.8  # ...but never past the deadline
    assert LeaseConfig("ns", "l", "me").request_timeout == 5.0
    assert LeaseConfig("ns", "l", "me", request_timeout=2.5).request_timeout == 2.5
    for deadline in (0.5, 1, 2, 10, 60):
        assert 0 < default_request_timeout(deadline) <= deadline


def test_expiry_counts_from_the_candidates_own_observation() -> None:
    assert not lease_expired(now=114.9, observed_at=100.0, duration=15)
    assert lease_expired(now=115.0, observed_at=100.0, duration=15)


def test_the_leader_wakes_up_by_its_deadline() -> None:
    assert renew_delay(now=100.0, deadline=110.0, retry_period=2.0) == 2.0
    assert renew_delay(now=109.5, deadline=110.0, retry_period=2.0) == 0.5
    assert renew_delay(now=111.0, deadline=110.0, retry_period=2.0) == 0.0


def _elector(**timings: float) -> LeaderElector:
    config = LeaseConfig("ns", "lease", "me", **timings)  # type: ignore[arg-type]
    # Never contacted: the port is closed.
    return LeaderElector(client.ApiClient(client.Configuration(host="http://127.0.0.1:9")), config)


def test_losing_closes_the_fence_and_leaves_kopf_half_the_margin() -> None:
    elector = _elector(duration=15, renew_deadline=10, retry_period=2)
    elector._start_leading(time.monotonic() - 10)  # last renewal started 10 s ago
    assert elector.leading and elector.is_leading()
    elector.stop_leading("not renewed")
    assert not elector.is_leading()
    assert elector.lost_at is not None
    # The earliest takeover is 5 s away: kopf gets until halfway, 2.5 s.
    assert elector.abandon_by - elector.lost_at == pytest.approx(2.5, abs=0.05)
    assert elector.renew_deadline_at == pytest.approx(elector.renewed_at + 10)


def test_another_holder_means_no_time_at_all() -> None:
    elector = _elector(duration=15, renew_deadline=10, retry_period=2)
    elector._start_leading(time.monotonic())
    elector.stop_leading("the lease names another holder", successor=True)
    assert elector.abandon_by == elector.lost_at


def test_the_fence_refuses_every_request_unless_leading() -> None:
    allowed = threading.Event()
    fenced = FencedApiClient(client.Configuration(host="http://127.0.0.1:9"), allowed.is_set)
    with pytest.raises(NotLeading, match=r"not leading: GET \S*/api/v1/namespaces refused"):
        client.CoreV1Api(fenced).list_namespace(_request_timeout=1)
    assert issubclass(NotLeading, OSError)  # reconcile code treats it as a transport error
    allowed.set()
    # Let through: it reaches the (closed) port.
    with pytest.raises(Exception) as raised:
        client.CoreV1Api(fenced).list_namespace(_request_timeout=1)
    assert not isinstance(raised.value, NotLeading)


def test_shutdown_waits_for_running_work_and_drops_queued_work() -> None:
    executor = ThreadPoolExecutor(max_workers=1)
    ran: list[str] = []

    def running() -> None:
        time.sleep(0.5)
        ran.append("running")

    executor.submit(running)
    executor.submit(lambda: ran.append("queued"))
    started = time.monotonic()
    assert asyncio.run(finish_in_flight(executor, timeout=5))
    assert time.monotonic() - started >= 0.45
    assert ran == ["running"]


def test_shutdown_wait_is_bounded() -> None:
    executor = ThreadPoolExecutor(max_workers=1)
    release = threading.Event()
    executor.submit(release.wait)

    async def bounded() -> tuple[bool, float]:
        started = time.monotonic()
        finished = await finish_in_flight(executor, timeout=0.3)
        return finished, time.monotonic() - started

    # (asyncio.run waits for the thread still joining the executor: free it meanwhile.)
    threading.Timer(1.0, release.set).start()
    finished, waited = asyncio.run(bounded())
    assert not finished
    assert waited < 0.9
