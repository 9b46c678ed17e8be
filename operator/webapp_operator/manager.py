"""The operator process: health endpoints, leader election, then kopf (kubebuilder's manager).

    standby --(Lease acquired)--> leader: kopf runs --(SIGTERM)--> stop kopf, let in-flight
                                              |        reconciles finish, release Lease, 0
                                              `--(renewal lost)--> fence, stop kopf, exit 1
    webhook (--webhook-only): kopf with the admission handlers only, no Lease, any number of
    replicas (the in-cluster webhook Deployment; the local runner's leader serves both)

Reconciles reach the API server through a `FencedApiClient` that sends nothing once this
replica stops leading, so a reconcile still running in a thread cannot write after that
moment. The Lease has its own client: its requests never queue behind reconciles.

A replica that loses its lease exits (status 1) rather than trying to lead again, as
controller-runtime does: its in-memory state may be stale, and the Deployment (or the local
runner) restarts it. It gives kopf until halfway to the earliest takeover to stop (no time at
all when another holder already leads), then leaves with os._exit: threads stuck in a
request, fenced anyway, must not keep it alive.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, NoReturn

import kopf
from kubernetes import client

from webapp_operator.config import OperatorConfig, parse_args
from webapp_operator.fastheal import Healer
from webapp_operator.handlers import Backoff, Controller, register
from webapp_operator.health import HealthServer, HealthState
from webapp_operator.kube import api_client, kopf_connection_limit, load_configuration
from webapp_operator.leader import FencedApiClient, LeaderElector, step_down
from webapp_operator.memory import MemoryTrimmer, freeze_startup_heap
from webapp_operator.names import EXIT_FAILED, EXIT_LEASE_LOST, EXIT_OK
from webapp_operator.reconciler import REQUEST_TIMEOUT_S, Reconciler
from webapp_operator.registry import Registry
from webapp_operator.settings import operator_settings
from webapp_operator.transport import Warmer

__all__ = ["SHUTDOWN_GRACE_S", "Manager", "main"]

logger = logging.getLogger("webapp_operator")

READY_TIMEOUT_S = 30.0
RECONCILE_THREADS = 16
POLL_S = 0.05
# A graceful stop: kopf stops and in-flight reconciles finish within this, then the Lease is
# released (one more request, at most the Lease request timeout). Within the local runner's
# 20 s and the Pod's 30 s terminationGracePeriodSeconds.
SHUTDOWN_GRACE_S = 15.0
TRIM_INTERVAL_S = 10.0
# The API server closes a connection idle for 90 s (measured on the embedded cluster: 90.2 s),
# and a request on a new one took 48 ms against 4.8 ms on an open one (load 9-14): one is
# kept open by a request after every 30 s without any (`transport.Warmer`).
WARM_INTERVAL_S = 30.0


def _always() -> bool:
    return True


def _exit_now(code: int) -> NoReturn:
    """Leave without waiting for anything (threads, kopf): only for a lost lease."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(Exception):
            handler.flush()
    os._exit(code)


@dataclass(frozen=True)
class _Prepared:
    registry: kopf.OperatorRegistry
    executor: ThreadPoolExecutor
    reconcile: bool
    inventory: Registry  # the registry ConfigMap's writer


class Manager:
    """One operator process."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.configuration = load_configuration(config.kubeconfig, config.context)
        identity = config.lease.identity if config.lease else "standalone"
        self.state = HealthState(identity)
        self.health = HealthServer(self.state, config.health_addr, config.health_port)
        self.elector: LeaderElector | None = None
        self.lease_api: client.ApiClient | None = None
        self.api: client.ApiClient = api_client(self.configuration)  # sizes the pools too
        if config.lease is not None:
            # The Lease keeps its own connections (never queued behind reconciles); the
            # reconciles get a client that sends nothing unless this replica leads.
            self.lease_api = self.api
            self.elector = LeaderElector(self.lease_api, config.lease)
            self.api = FencedApiClient(self.configuration, self.elector.is_leading)
        self.stop = asyncio.Event()
        # Freed memory back to the system every few seconds (bursts leave the heap large).
        self.trimmer = MemoryTrimmer(TRIM_INTERVAL_S)
        # The reconciles' connection to the API server, kept open while nothing is sent, so
        # that the first heal after a quiet spell does not open one first.
        self.warmer = Warmer(self.api, WARM_INTERVAL_S)

    def _install_signal_handlers(self) -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, self._on_signal, signum)

    def _on_signal(self, signum: int) -> None:
        logger.info("received %s: stopping", signal.Signals(signum).name)
        self.stop.set()

    async def run(self) -> int:
        self._install_signal_handlers()
        if self.config.health_port:
            await self.health.start()
        self.trimmer.start()
        self.warmer.start()
        try:
            if self.config.webhook_only:
                self.state.role = "webhook"
                return await self._serve(self._prepare(reconcile=False))
            # Everything that takes CPU time (the kubernetes client's lazy imports alone take
            # a second and a half, several on a loaded machine) happens before the Lease is
            # taken: a standby is ready to lead at once, and the first seconds of leadership
            # are not spent where a renewal would have to wait.
            prepared = self._prepare(reconcile=True)
            if self.elector is not None:
                self.state.role = "standby"
                if not await self.elector.acquire(self.stop):
                    prepared.executor.shutdown(wait=False, cancel_futures=True)
                    return EXIT_OK  # stopped while standing by
            self.state.role, self.state.leading = "leader", True
            return await self._serve(prepared)
        finally:
            self.state.role, self.state.leading, self.state.ready = "stopping", False, False
            self.trimmer.stop()
            self.warmer.stop()
            if self.elector is not None:
                # Only an unexpected error gets here still leading: without knowing what
                # still runs, fence and let the Lease expire rather than release it.
                self.elector.stop_leading("stopping after an error")
            await self.health.stop()
            self.api.close()
            if self.lease_api is not None:
                self.lease_api.close()

    def _prepare(self, *, reconcile: bool) -> _Prepared:
        """kopf's registry with our handlers, and the reconciles' executor: built before the
        Lease is taken (see `run`)."""
        config = self.config
        registry = kopf.OperatorRegistry()
        registry_map = Registry(self.api, config.operator_namespace, config.registry_name)
        # Reconciles block on the kubernetes client: this many run at once (bursts of WebApps,
        # 200 at once in the benchmark, without starving the event loop or the API server).
        executor = ThreadPoolExecutor(max_workers=RECONCILE_THREADS, thread_name_prefix="reconcile")
        reconciler = Reconciler(self.api, registry_map)
        healer = None
        if config.hot_heal:
            allowed = self.elector.is_leading if self.elector is not None else _always
            healer = Healer(self.api, timeout=REQUEST_TIMEOUT_S, allowed=allowed)
        controller = Controller(
            reconciler,
            config.resync_seconds,
            Backoff(config.backoff_base, config.backoff_cap),
            counters=self.state.counters,
            executor=executor,
            concurrency=RECONCILE_THREADS,
            healer=healer,
        )
        register(
            registry,
            controller,
            self.configuration,
            reconcile=reconcile,
            webhooks=config.webhook is not None,
            connections=kopf_connection_limit(config.namespaces),
        )
        return _Prepared(registry, executor, reconcile, registry_map)

    async def _serve(self, prepared: _Prepared) -> int:
        """Run kopf until a signal, a lost Lease, or kopf's own failure."""
        config = self.config
        registry, executor, reconcile = prepared.registry, prepared.executor, prepared.reconcile
        # Renewals first: their thread must run from the first moment of leadership, before
        # kopf's start-up occupies the event loop.
        elector = self.elector if reconcile else None
        holding = elector.hold() if elector is not None else asyncio.Event().wait()
        renewing = asyncio.create_task(holding, name="lease")
        await asyncio.sleep(0)  # the task's first step starts the renewal thread
        kopf_stop, kopf_ready = asyncio.Event(), asyncio.Event()
        operator = asyncio.create_task(
            kopf.operator(
                registry=registry,
                settings=operator_settings(config, self.state.identity, executor),
                clusterwide=not config.namespaces,
                namespaces=config.namespaces,
                standalone=True,
                stop_flag=kopf_stop,
                ready_flag=kopf_ready,
            ),
            name="kopf",
        )
        stopping = asyncio.create_task(self.stop.wait(), name="stop")
        readiness = asyncio.create_task(self._become_ready(kopf_ready), name="readiness")
        try:
            await asyncio.wait({operator, renewing, stopping}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            kopf_stop.set()
            for task in (stopping, readiness):
                task.cancel()
            self.state.ready = False

        if elector is not None and renewing.done():
            await self._abandon(elector, operator, renewing, executor)
        # A signal, or kopf ended on its own: kopf stops first (its daemons see `stopped`;
        # one still busy is cancelled after a second, its reconcile thread runs on), while the
        # Lease is still renewed.
        grace_end = time.monotonic() + SHUTDOWN_GRACE_S
        await asyncio.wait(
            {operator, renewing}, timeout=SHUTDOWN_GRACE_S, return_when=asyncio.FIRST_COMPLETED
        )
        if elector is not None and renewing.done():
            await self._abandon(elector, operator, renewing, executor)
        failed = await self._outcome(operator)
        # Still leading: the entries the registry's writer holds back (its linger) go now.
        await asyncio.to_thread(prepared.inventory.close)
        if elector is None:
            renewing.cancel()
            executor.shutdown(wait=False, cancel_futures=True)
        else:
            await step_down(elector, executor, renewing, grace_end - time.monotonic())
            if renewing.done() and not renewing.cancelled():  # lost while draining
                await self._abandon(elector, operator, renewing, executor)
        return EXIT_FAILED if failed else EXIT_OK

    @staticmethod
    async def _outcome(operator: asyncio.Task[None]) -> bool:
        """Whether kopf failed (a kopf that did not stop in time is cancelled)."""
        if not operator.done():
            logger.error("kopf did not stop within %gs", SHUTDOWN_GRACE_S)
            operator.cancel()
        try:
            await operator
        except asyncio.CancelledError:
            return True
        except Exception:
            logger.exception("kopf failed")
            return True
        return False

    async def _abandon(
        self,
        elector: LeaderElector,
        operator: asyncio.Task[None],
        renewing: asyncio.Task[Any],
        executor: ThreadPoolExecutor,
    ) -> NoReturn:
        """Leadership is lost: the fence already refuses the reconciles' requests; kopf's own
        (finalizers, events) end with kopf, which gets until `abandon_by` to stop. Then the
        process exits at once: threads still stuck in a request (fenced) must not keep it
        alive, and controller-runtime exits the same way."""
        self.state.leading = False
        failure = renewing.exception() if renewing.done() and not renewing.cancelled() else None
        # hold() returns having stopped leading; a hold() that failed has not.
        elector.stop_leading(f"the lease loop failed: {failure!r}")
        remaining = max(0.0, elector.abandon_by - time.monotonic())
        done, _ = await asyncio.wait({operator}, timeout=remaining)
        executor.shutdown(wait=False, cancel_futures=True)
        if operator not in done:
            logger.error("leadership lost: kopf still running, exiting at once")
        else:
            logger.error("leadership lost: exiting so that a fresh process stands by")
        _exit_now(EXIT_LEASE_LOST)

    async def _become_ready(self, kopf_ready: asyncio.Event) -> None:
        """Ready = kopf started and, if configured, the webhook accepts connections: the first
        WebApp applied after readiness must reach the webhook."""
        await kopf_ready.wait()
        # kopf installs its own SIGINT/SIGTERM handlers when it starts; take them back so
        # every shutdown goes through one path (stop kopf, then release the Lease).
        self._install_signal_handlers()
        webhook = self.config.webhook
        if webhook is not None and not await _listening(webhook.addr, webhook.port):
            logger.error("the webhook is not listening on port %s", webhook.port)
            return
        # Before readiness: the collection it starts with is not paid by the first WebApps.
        frozen = freeze_startup_heap()
        self.state.ready = True
        logger.info(
            "ready: %s as %s (%d start-up objects frozen)",
            self.state.role,
            self.state.identity,
            frozen,
        )


async def _listening(addr: str, port: int) -> bool:
    host = "127.0.0.1" if addr in ("0.0.0.0", "") else addr
    loop = asyncio.get_running_loop()
    deadline = loop.time() + READY_TIMEOUT_S
    while loop.time() < deadline:
        try:
            _, writer = await asyncio.open_connection(host, port)
        except OSError:
            await asyncio.sleep(POLL_S)
            continue
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()
        return True
    return False


def main(argv: list[str] | None = None) -> int:
    config = parse_args(argv)
    logging.basicConfig(
        level=config.log_level,
        format="%(asctime)s %(levelname)-7s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    # The client logs every retried connection at WARNING; kopf reports what matters.
    logging.getLogger("urllib3").setLevel(logging.ERROR)
    # kopf logs every handler call at INFO ("Handler ... succeeded"): one line per watch event.
    # The operator logs its own actions (webapp_operator.*); kopf speaks up for problems.
    if config.log_level != "DEBUG":
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
    try:
        return asyncio.run(Manager(config).run())
    except client.exceptions.ApiException as exc:
        logger.error("cannot start: %s %s", exc.status, exc.reason)
        return EXIT_FAILED
