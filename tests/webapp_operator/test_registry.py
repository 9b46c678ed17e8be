"""The registry ConfigMap, off the reconcile's critical path: `record` never waits for the
API server, one writer batches entries, `remove` wins over a queued record, memory is bounded.
Against the real cluster (a ConfigMap per test, in the test's namespace)."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from urllib.parse import urlparse

import pytest
from kubernetes import client

from compare.cluster import ClusterTarget
from tests.helpers import eventually, raw
from tests.loopback_proxy import LoopbackProxy
from webapp_operator import registry as registry_module
from webapp_operator.registry import Registry

pytestmark = pytest.mark.cluster


def _data(api: client.ApiClient, namespace: str) -> dict[str, str]:
    cm = raw(client.CoreV1Api(api).read_namespaced_config_map, "registry", namespace)
    return dict((cm or {}).get("data") or {})


def test_record_is_batched_by_the_writer_and_remove_is_synchronous(
    api: client.ApiClient, namespace: str
) -> None:
    registry = Registry(api, namespace, "registry")
    try:
        assert all(registry.record("ns", f"app{i}", f"uid-{i}") for i in range(20))
        assert not registry.record("ns", "app0", "uid-0")  # already queued
        eventually(lambda: len(_data(api, namespace)) == 20, what="20 entries written")
        assert registry.pending == 0
        assert not registry.record("ns", "app0", "uid-0")  # already written: no call
        assert registry.remove("ns", "app3", "uid-3")
        assert "ns.app3" not in _data(api, namespace)
        assert not registry.remove("ns", "app3", "uid-3")
        # A reconcile that read the WebApp just before its deletion began records it again:
        # the removed UID is remembered, so the entry does not come back.
        assert not registry.record("ns", "app3", "uid-3")
    finally:
        registry.close()


def test_record_never_waits_for_a_hung_api_server(
    cluster: ClusterTarget, api: client.ApiClient, namespace: str
) -> None:
    parsed = urlparse(api.configuration.host)
    proxy = LoopbackProxy((parsed.hostname or "127.0.0.1", parsed.port or 443))
    proxy.pause()
    configuration = client.Configuration()
    configuration.__dict__.update(api.configuration.__dict__)
    configuration.host = f"https://127.0.0.1:{proxy.port}"
    frozen = client.ApiClient(configuration)
    registry = Registry(frozen, namespace, "registry")
    try:
        started = time.monotonic()
        for i in range(50):
            registry.record("ns", f"app{i}", f"uid-{i}")
        assert time.monotonic() - started < 0.5  # queued only; the writer is stuck, not us
        assert registry.pending == 50
        proxy.resume()
        eventually(lambda: len(_data(api, namespace)) == 50, what="written once it answers")
    finally:
        registry.close()
        proxy.cut()


def test_memory_is_bounded(
    api: client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry_module, "MAX_ENTRIES", 5)
    monkeypatch.setattr(registry_module, "_REMOVED_MEMORY", 3)
    registry = Registry(api, namespace, "registry")
    try:
        recorded = [registry.record("ns", f"app{i}", f"uid-{i}") for i in range(8)]
        assert recorded == [True] * 5 + [False] * 3
        eventually(lambda: len(_data(api, namespace)) == 5, what="five entries")
        for i in range(5):
            registry.remove("ns", f"app{i}", f"uid-{i}")
        assert len(registry._removed) == 3
        assert _data(api, namespace) == {}
    finally:
        registry.close()


def test_removals_that_arrive_together_leave_in_one_write(
    api: client.ApiClient, namespace: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thousand WebApps deleted at once: their cleanups' removals are group-committed, not
    a read and a patch each, one after the other."""
    registry = Registry(api, namespace, "registry")
    patches: list[int] = []
    write = registry._patch

    def counted(entries: dict[str, str | None]) -> None:
        patches.append(len(entries))
        write(entries)

    try:
        for i in range(12):
            registry.record("ns", f"app{i}", f"uid-{i}")
        eventually(lambda: len(_data(api, namespace)) == 12, what="12 entries written")
        monkeypatch.setattr(registry, "_patch", counted)
        results: list[bool] = []
        with registry._writes:  # a write in flight: the removals queue behind it
            threads = [
                threading.Thread(
                    target=lambda i=i: results.append(registry.remove("ns", f"app{i}", f"uid-{i}"))
                )
                for i in range(10)
            ]
            for thread in threads:
                thread.start()
            eventually(lambda: len(registry._removing) == 10, what="10 removals queued")
        for thread in threads:
            thread.join(timeout=30)
        assert results == [True] * 10
        assert patches == [10]
        assert sorted(_data(api, namespace)) == ["ns.app10", "ns.app11"]
    finally:
        registry.close()


def test_records_of_a_burst_leave_in_one_write(api: client.ApiClient, namespace: str) -> None:
    """WebApps created one after the other within the writer's linger: one write of the
    whole ConfigMap, not one per WebApp."""
    registry = Registry(api, namespace, "registry", linger=1.0)
    patches: list[int] = []
    write = registry._patch

    def counted(entries: Mapping[str, str | None]) -> None:
        patches.append(len(entries))
        write(entries)

    registry._patch = counted  # type: ignore[method-assign]
    try:
        for i in range(6):
            registry.record("ns", f"app{i}", f"uid-{i}")
            time.sleep(0.05)
        eventually(lambda: len(_data(api, namespace)) == 6, what="6 entries written")
        assert patches == [6]
    finally:
        registry.close()
