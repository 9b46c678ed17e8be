"""The Lease elector in-process against the real API server: compare-and-swap, expiry on the
candidate's own clock, release, and no split brain — a leader whose Lease requests hang stops
writing before a standby can take over, one that reads another holder stops at once, and a
graceful stop releases the Lease only after in-flight work has written. (The process-level
failover is in test_lifecycle.)

Every time here is `time.monotonic()` in this one process, so the electors' moments and the
writes compare directly. The server-side order is checked too, by resourceVersion: etcd's
revision is one counter for every object (clients must treat it as opaque; a test on an
etcd-backed cluster may compare it).
"""

from __future__ import annotations

import asyncio
import copy
import json
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import yaml
from kubernetes import client

from compare.approaches.operator.controllers import stop_operator
from compare.approaches.operator.process import OPERATOR, health, is_ready, spawn_operator
from compare.cluster import ClusterTarget
from compare.deploy.local import free_port
from compare.deploy.processes import LocalProcess, alive, terminate
from tests.helpers import eventually, make_webapp, raw
from tests.loopback_proxy import LoopbackProxy
from webapp_operator.leader import (
    FencedApiClient,
    LeaderElector,
    LeaseConfig,
    NotLeading,
    step_down,
)
from webapp_operator.names import LEASE_NAME, OPERATOR_NAMESPACE

from .conftest import FAST
from .helpers import get_deployment, run_webapp

pytestmark = pytest.mark.cluster

SLACK_S = 0.3  # event-loop and thread scheduling on a loaded machine


def _config(namespace: str, name: str, identity: str, **timings: float) -> LeaseConfig:
    values = {"duration": 2.0, "renew_deadline": 1.5, "retry_period": 0.2, **timings}
    return LeaseConfig(namespace, name, identity, **values)  # type: ignore[arg-type]


def _rivals(
    api: client.ApiClient, namespace: str, **timings: float
) -> tuple[str, LeaderElector, LeaderElector]:
    """A fresh Lease's name and two electors on it, "a" and "b"."""
    name = f"lease-{uuid.uuid4().hex[:6]}"
    a = LeaderElector(api, _config(namespace, name, "a", **timings))
    b = LeaderElector(api, _config(namespace, name, "b", **timings))
    return name, a, b


def _lease(api: client.ApiClient, namespace: str, name: str) -> dict[str, Any]:
    lease = raw(client.CoordinationV1Api(api).read_namespaced_lease, name, namespace)
    assert lease is not None
    return lease


def _version(obj: dict[str, Any]) -> int:
    return int(obj["metadata"]["resourceVersion"])


@dataclass
class Writes:
    """A stand-in reconcile: writes a ConfigMap through the leader's fenced client."""

    api: client.ApiClient
    namespace: str
    name: str = "work"
    done: list[tuple[float, float, int]] = field(default_factory=list)  # issued, acked, rv
    refused: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        body = {"metadata": {"name": self.name}, "data": {"n": "0"}}
        client.CoreV1Api(self.api).create_namespaced_config_map(self.namespace, body)

    def write(self, fenced: client.ApiClient, n: int) -> None:
        issued = time.monotonic()
        try:
            written = raw(
                client.CoreV1Api(fenced).patch_namespaced_config_map,
                self.name,
                self.namespace,
                {"data": {"n": str(n)}},
                _request_timeout=5,
            )
        except NotLeading:
            self.refused.append(issued)
            return
        assert written is not None
        self.done.append((issued, time.monotonic(), _version(written)))

    def keep_writing(self, fenced: client.ApiClient, stop: threading.Event) -> threading.Thread:
        def loop() -> None:
            n = 0
            while not stop.wait(0.02):
                n += 1
                self.write(fenced, n)

        thread = threading.Thread(target=loop, daemon=True)
        thread.start()
        return thread


def _through(api: client.ApiClient, proxy: LoopbackProxy) -> client.ApiClient:
    configuration = copy.deepcopy(api.configuration)
    configuration.host = f"https://127.0.0.1:{proxy.port}"
    return client.ApiClient(configuration)


def _proxy_to(api: client.ApiClient) -> LoopbackProxy:
    server = urlsplit(api.configuration.host)
    return LoopbackProxy((server.hostname or "127.0.0.1", server.port or 443))


def test_one_holder_expiry_and_release(api: client.ApiClient, namespace: str) -> None:
    name, a, b = _rivals(api, namespace)

    assert a.try_acquire_or_renew()  # creates the Lease
    assert not b.try_acquire_or_renew()  # held and fresh
    assert a.try_acquire_or_renew()  # renewal
    lease = _lease(api, namespace, name)
    assert lease["spec"]["holderIdentity"] == "a"
    assert lease["spec"]["leaseDurationSeconds"] == 2

    # a stops renewing (as if killed): b takes over once it saw no change for a full duration.
    started = time.monotonic()
    eventually(b.try_acquire_or_renew, timeout=5, what="b to take the expired lease")
    assert time.monotonic() - started >= 2.0 - 0.25
    lease = _lease(api, namespace, name)
    assert lease["spec"]["holderIdentity"] == "b"
    assert lease["spec"]["leaseTransitions"] == 1
    assert not a.try_acquire_or_renew()

    # A graceful release frees it at once.
    assert asyncio.run(b.acquire(asyncio.Event()))  # b holds it: leading at once
    assert b.release()
    assert not b.leading
    assert a.try_acquire_or_renew()


def test_frozen_leader_stops_writing_before_the_standby_takes_over(
    api: client.ApiClient, namespace: str
) -> None:
    """The leader's Lease connection freezes (a paused proxy: requests hang, no error) while
    its reconciles can still reach the API server. It must stop writing at its renew deadline,
    counted from the start of its last successful renewal, however long the hung request
    lasts; the standby takes over a lease duration after the last renewal it saw."""
    name = f"lease-{uuid.uuid4().hex[:6]}"
    # The longest request timeout allowed (= the renew deadline): the hung renewal outlives
    # the deadline, so a leader that waited for it would overrun by at least a retry period.
    timings = {"duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.5, "request_timeout": 2.0}
    proxy = _proxy_to(api)
    frozen_api = _through(api, proxy)
    a = LeaderElector(frozen_api, _config(namespace, name, "a", **timings))
    b = LeaderElector(api, _config(namespace, name, "b", **timings))
    writes = Writes(api, namespace)
    fenced = FencedApiClient(api.configuration, a.is_leading)
    stop_writing = threading.Event()

    async def scenario() -> float:
        assert await a.acquire(asyncio.Event())
        holding = asyncio.create_task(a.hold())
        b_stop = asyncio.Event()
        standing_by = asyncio.create_task(b.acquire(b_stop))
        writer = writes.keep_writing(fenced, stop_writing)
        await asyncio.sleep(1.5)  # renewals, writes; b stands by
        assert a.leading and not b.leading and not standing_by.done()
        assert writes.done, "the leader wrote nothing while leading"
        paused_at = time.monotonic()
        proxy.pause()
        await asyncio.wait_for(asyncio.shield(standing_by), timeout=10)
        assert holding.done(), "the old leader still holds on after the takeover"
        await asyncio.sleep(0.5)  # the writer keeps trying: every attempt refused
        stop_writing.set()
        await asyncio.to_thread(writer.join, 5)
        return paused_at

    try:
        paused_at = asyncio.run(scenario())
        takeover = _lease(api, namespace, name)
        # The frozen renewal, let through late, writes nothing (and could not: CAS).
        proxy.resume()
        time.sleep(1.0)
        after = _lease(api, namespace, name)
    finally:
        stop_writing.set()
        proxy.cut()
        frozen_api.close()
        fenced.close()

    assert a.lost_at is not None and b.acquired_at is not None
    # Leadership ended at the deadline, not when the hung request gave up.
    assert a.lost_at - a.renewed_at <= timings["renew_deadline"] + SLACK_S, a.lost_reason
    assert a.lost_at - paused_at <= timings["renew_deadline"] + SLACK_S
    # The order: last write acknowledged < stopped leading < the standby's winning attempt.
    last_acked = max(acked for _, acked, _ in writes.done)
    last_version = max(version for _, _, version in writes.done)
    assert all(issued < a.lost_at for issued, _, _ in writes.done)
    assert last_acked < b.acquired_at
    assert a.lost_at < b.acquired_at
    assert writes.refused and min(writes.refused) < b.acquired_at  # fenced before the takeover
    assert b.acquired_at - a.renewed_at >= timings["duration"] - SLACK_S
    # And on the server: the old leader's last write precedes the new holder's Lease.
    assert takeover["spec"]["holderIdentity"] == "b"
    assert last_version < _version(takeover)
    assert after["metadata"]["resourceVersion"] == takeover["metadata"]["resourceVersion"]
    gap = b.acquired_at - a.lost_at
    print(
        f"\nfrozen leader: stopped {a.lost_at - a.renewed_at:.2f}s after its last renewal "
        f"(deadline {timings['renew_deadline']}s), last write acked {a.lost_at - last_acked:.2f}s "
        f"before that; standby took over {gap:.2f}s after it stopped "
        f"({len(writes.done)} writes, {len(writes.refused)} refused)"
    )


def test_leader_stops_at_once_when_the_lease_names_another_holder(
    api: client.ApiClient, namespace: str
) -> None:
    name = f"lease-{uuid.uuid4().hex[:6]}"
    timings = {"duration": 6.0, "renew_deadline": 4.0, "retry_period": 0.25}
    a = LeaderElector(api, _config(namespace, name, "a", **timings))
    leases = client.CoordinationV1Api(api)

    async def scenario() -> float:
        assert await a.acquire(asyncio.Event())
        holding = asyncio.create_task(a.hold())
        await asyncio.sleep(0.6)
        lease = _lease(api, namespace, name)
        lease["spec"]["holderIdentity"] = "intruder"
        await asyncio.to_thread(
            leases.replace_namespaced_lease, name, namespace, lease, _preload_content=False
        )
        written = time.monotonic()
        await asyncio.wait_for(holding, timeout=timings["renew_deadline"] + 2)
        return written

    written = asyncio.run(scenario())
    assert a.lost_at is not None and not a.is_leading()
    assert "another holder" in a.lost_reason
    # Within a retry period, not at the renew deadline.
    assert a.lost_at - written <= timings["retry_period"] + SLACK_S
    assert _lease(api, namespace, name)["spec"]["holderIdentity"] == "intruder"


def test_a_busy_event_loop_does_not_cost_the_lease(api: client.ApiClient, namespace: str) -> None:
    """kopf's start-up and bursts of events can keep the event loop busy for seconds on a
    loaded machine (found in CI: the leader lost its Lease right after taking it, again and
    again). The renewals run on a thread of their own: a loop kept busy for twice the renew
    deadline, in Python code holding the GIL, costs nothing."""
    timings = {"duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.25}
    name = f"lease-{uuid.uuid4().hex[:6]}"
    a = LeaderElector(api, _config(namespace, name, "a", **timings))
    busy_s = 2 * timings["renew_deadline"]

    async def scenario() -> tuple[float, float]:
        assert await a.acquire(asyncio.Event())
        holding = asyncio.create_task(a.hold())
        await asyncio.sleep(0)  # as the manager does: the renewals start first
        acquired = a.renewed_at
        started = time.monotonic()
        spins = 0
        while time.monotonic() - started < busy_s:  # no await: the loop runs nothing else
            spins += 1
        assert spins > 0
        busy_until = time.monotonic()
        renewed = a.renewed_at
        assert not holding.done(), a.lost_reason
        holding.cancel()
        return renewed - acquired, busy_until - renewed

    renewed_for, since_renewal = asyncio.run(scenario())
    assert a.leading, a.lost_reason
    assert renewed_for >= busy_s - timings["renew_deadline"]  # renewed while the loop was busy
    assert since_renewal < timings["renew_deadline"]
    print(
        f"\nevent loop busy {busy_s:g}s: renewed throughout (last renewal {since_renewal:.2f}s "
        f"before the loop was free; deadline {timings['renew_deadline']:g}s)"
    )
    assert a.release()


def test_graceful_stop_releases_the_lease_after_in_flight_work_wrote(
    api: client.ApiClient, namespace: str
) -> None:
    """SIGTERM's order (manager.step_down): the reconcile already running finishes and
    writes, queued ones are dropped, and only then is the Lease released; the standby was
    not leading when that write landed."""
    name, a, b = _rivals(api, namespace, duration=3.0, renew_deadline=2.0, retry_period=0.25)
    writes = Writes(api, namespace)
    fenced = FencedApiClient(api.configuration, a.is_leading)
    standby_leading_at_write: list[bool] = []

    def reconcile(n: int) -> None:
        time.sleep(1.0)  # in flight when the stop comes
        writes.write(fenced, n)
        standby_leading_at_write.append(b.leading)

    async def scenario() -> tuple[bool, float]:
        assert await a.acquire(asyncio.Event())
        holding = asyncio.create_task(a.hold())
        standing_by = asyncio.create_task(b.acquire(asyncio.Event()))
        executor = ThreadPoolExecutor(max_workers=1)
        executor.submit(reconcile, 1)
        executor.submit(reconcile, 2)  # queued: dropped by the stop
        await asyncio.sleep(0.1)
        started = time.monotonic()
        released = await step_down(a, executor, holding, grace=5.0)
        stepped_down = time.monotonic() - started
        await asyncio.wait_for(standing_by, timeout=5)
        return released, stepped_down

    try:
        released, stepped_down = asyncio.run(scenario())
    finally:
        fenced.close()
    assert released
    assert stepped_down >= 0.8  # it waited for the running reconcile
    assert len(writes.done) == 1 and not writes.refused
    assert standby_leading_at_write == [False]
    release_version = int(a.observed_version or 0)
    takeover = _lease(api, namespace, name)
    assert takeover["spec"]["holderIdentity"] == "b"
    assert writes.done[0][2] < release_version < _version(takeover)
    print(f"\ngraceful stop: in-flight reconcile finished, then released ({stepped_down:.2f}s)")


def test_graceful_stop_that_overruns_fences_and_leaves_the_lease(
    api: client.ApiClient, namespace: str
) -> None:
    """A reconcile still running after the grace period is fenced off (its write is refused)
    and the Lease is not released: the standby waits for it to expire."""
    timings = {"duration": 3.0, "renew_deadline": 2.0, "retry_period": 0.25}
    name, a, b = _rivals(api, namespace, **timings)
    writes = Writes(api, namespace)
    fenced = FencedApiClient(api.configuration, a.is_leading)

    def reconcile() -> None:
        time.sleep(1.5)  # longer than the grace period
        writes.write(fenced, 1)

    async def scenario() -> bool:
        assert await a.acquire(asyncio.Event())
        holding = asyncio.create_task(a.hold())
        standing_by = asyncio.create_task(b.acquire(asyncio.Event()))
        executor = ThreadPoolExecutor(max_workers=1)
        executor.submit(reconcile)
        await asyncio.sleep(0.1)
        released = await step_down(a, executor, holding, grace=0.3)
        assert _lease(api, namespace, name)["spec"]["holderIdentity"] == "a"
        await asyncio.wait_for(standing_by, timeout=timings["duration"] + 3)
        return released

    try:
        released = asyncio.run(scenario())
    finally:
        fenced.close()
    assert not released
    assert not writes.done and len(writes.refused) == 1
    assert a.lost_at is not None and b.acquired_at is not None
    assert writes.refused[0] > a.lost_at
    assert b.acquired_at - a.renewed_at >= timings["duration"] - SLACK_S


def _through_proxy(kubeconfig: Path, proxy: LoopbackProxy, into: Path) -> Path:
    config = yaml.safe_load(kubeconfig.read_text())
    for entry in config["clusters"]:
        entry["cluster"]["server"] = f"https://127.0.0.1:{proxy.port}"
    into.write_text(yaml.safe_dump(config))
    return into


@pytest.mark.usefixtures("restore_operator")
def test_frozen_operator_process_exits_before_the_standby_leads(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str, tmp_path: Path
) -> None:
    """Two real operator processes on the real Lease. Every connection of the leader (Lease,
    reconciles, kopf's watches) goes through a proxy that freezes: it must stop (its process
    is gone, so it writes nothing more) before the standby takes the Lease."""
    stop_operator(cluster)  # the shared leader: these two processes compete instead
    directory = OPERATOR.state_dir(cluster)
    settings = json.loads((directory / "settings.json").read_text())
    kubeconfig = directory / "kubeconfig.yaml"
    server = urlsplit(yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]["server"])
    proxy = LoopbackProxy((server.hostname or "127.0.0.1", server.port or 443))

    def replica(instance: str, via: Path) -> LocalProcess:
        return spawn_operator(
            directory,
            instance=instance,
            kubeconfig=via,
            health_port=free_port(),
            webhook_port=settings.get("webhook_port"),
            cert_dir=directory / "certs",
            options=FAST,
            identity=f"{instance}-{uuid.uuid4().hex[:6]}",
            supervised=False,  # the operator's own exit is what is measured here
        )

    leader = replica("frozen", _through_proxy(kubeconfig, proxy, tmp_path / "kubeconfig"))
    standby: LocalProcess | None = None
    try:
        eventually(lambda: is_ready(leader), timeout=30, what="the proxied replica leading")
        standby = replica("standby", kubeconfig)
        assert eventually(lambda: health(standby), what="standby up")["role"] == "standby"
        run_webapp(api, namespace, make_webapp("shop", replicas=1))  # the leader works

        proxy.pause()
        paused = time.monotonic()
        exited = takeover = None
        deadline = paused + FAST.lease_duration + 15
        while time.monotonic() < deadline and (exited is None or takeover is None):
            now = time.monotonic()
            if exited is None and not alive(leader):
                exited = now
            holder = _lease(api, OPERATOR_NAMESPACE, LEASE_NAME)["spec"].get("holderIdentity")
            if takeover is None and holder == standby.identity:
                takeover = now
            time.sleep(0.02)
        assert exited is not None, "the frozen leader never stopped"
        assert takeover is not None, "the standby never took over"
        log = leader.log_path.read_text().rsplit("\n--- ", 1)[-1]
        assert "stopped leading: " in log and "leadership lost" in log
        kopf = "abandoned" if "kopf still running" in log else "stopped in time"
        print(
            f"\nfrozen operator process: exited {exited - paused:.2f}s after the freeze (kopf "
            f"{kopf}), the standby took the Lease {takeover - paused:.2f}s after it (gap "
            f"{takeover - exited:.2f}s; lease {FAST.lease_duration}/"
            f"{FAST.lease_renew_deadline}/{FAST.lease_retry_period}s)"
        )
        assert exited < takeover
        # The new leader serves.
        client.AppsV1Api(api).patch_namespaced_deployment(
            "shop", namespace, {"spec": {"replicas": 2}}, field_manager="chaos-test"
        )
        eventually(
            lambda: (get_deployment(api, namespace, "shop") or {})["spec"]["replicas"] == 1,
            what="healed by the new leader",
        )
        # SIGTERM: kopf stops, in-flight reconciles finish, then the Lease is released.
        terminate(standby)
        assert not _lease(api, OPERATOR_NAMESPACE, LEASE_NAME)["spec"].get("holderIdentity")
        assert "released the lease" in standby.log_path.read_text().rsplit("\n--- ", 1)[-1]
    finally:
        proxy.cut()
        terminate(leader, kill=True)
        if standby is not None:
            terminate(standby)  # graceful: releases the Lease for the restored operator
