"""The operator process: health endpoints, leader election, then kopf (kubebuilder's manager).

    standby --(Lease acquired)--> leader: kopf runs --(SIGTERM)--> stop kopf, release Lease, 0
                                              `--(renewal lost)--> stop kopf, exit 1
    webhook (--webhook-only): kopf with the admission handlers only, no Lease, any number of
    replicas (the in-cluster webhook Deployment; the local runner's leader serves both)

A replica that loses its lease exits rather than trying to lead again, as controller-runtime
does: its in-memory state may be stale, and the Deployment (or the local runner) restarts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import sys
from concurrent.futures import ThreadPoolExecutor

import kopf
from kubernetes import client

from webapp_operator.config import OperatorConfig, parse_args
from webapp_operator.handlers import Backoff, Controller, register
from webapp_operator.health import HealthServer, HealthState
from webapp_operator.kube import api_client, load_configuration
from webapp_operator.leader import LeaderElector
from webapp_operator.reconciler import Reconciler
from webapp_operator.registry import Registry
from webapp_operator.settings import operator_settings

__all__ = ["Manager", "main"]

logger = logging.getLogger("webapp_operator")

EXIT_OK = 0
EXIT_FAILED = 1
READY_TIMEOUT_S = 30.0
RECONCILE_THREADS = 16
POLL_S = 0.05


class Manager:
    """One operator process."""

    def __init__(self, config: OperatorConfig) -> None:
        self.config = config
        self.configuration = load_configuration(config.kubeconfig, config.context)
        self.api = api_client(self.configuration)
        identity = config.lease.identity if config.lease else "standalone"
        self.state = HealthState(identity)
        self.health = HealthServer(self.state, config.health_addr, config.health_port)
        self.elector = LeaderElector(self.api, config.lease) if config.lease else None
        self.stop = asyncio.Event()

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
        try:
            if self.config.webhook_only:
                self.state.role = "webhook"
                return await self._serve(reconcile=False)
            if self.elector is not None:
                self.state.role = "standby"
                if not await self.elector.acquire(self.stop):
                    return EXIT_OK  # stopped while standing by
            self.state.role, self.state.leading = "leader", True
            return await self._serve(reconcile=True)
        finally:
            self.state.role, self.state.leading, self.state.ready = "stopping", False, False
            if self.elector is not None:
                # Graceful stop: hand the Lease over now instead of making the next leader
                # wait out the lease duration. (After a lost lease, release() is a no-op.)
                await asyncio.to_thread(self.elector.release)
            await self.health.stop()
            self.api.close()

    async def _serve(self, *, reconcile: bool) -> int:
        """Run kopf until a signal, a lost Lease, or kopf's own failure."""
        config = self.config
        registry = kopf.OperatorRegistry()
        registry_map = Registry(self.api, config.operator_namespace, config.registry_name)
        # Reconciles block on the kubernetes client: this many run at once (bursts of WebApps,
        # 200 at once in the benchmark, without starving the event loop or the API server).
        executor = ThreadPoolExecutor(max_workers=RECONCILE_THREADS, thread_name_prefix="reconcile")
        controller = Controller(
            Reconciler(self.api, registry_map),
            config.resync_seconds,
            Backoff(config.backoff_base, config.backoff_cap),
            counters=self.state.counters,
            executor=executor,
        )
        register(
            registry,
            controller,
            self.configuration,
            reconcile=reconcile,
            webhooks=config.webhook is not None,
        )
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
        holding = self.elector.hold() if self.elector and reconcile else asyncio.Event().wait()
        renewing = asyncio.create_task(holding, name="lease")
        stopping = asyncio.create_task(self.stop.wait(), name="stop")
        readiness = asyncio.create_task(self._become_ready(kopf_ready), name="readiness")
        try:
            done, _ = await asyncio.wait(
                {operator, renewing, stopping}, return_when=asyncio.FIRST_COMPLETED
            )
        finally:
            kopf_stop.set()
            for task in (renewing, stopping, readiness):
                task.cancel()
            self.state.ready = False
        try:
            await operator
        except Exception:
            logger.exception("kopf failed")
            return EXIT_FAILED
        finally:
            executor.shutdown(wait=False, cancel_futures=True)
        if renewing in done:
            logger.error("leadership lost: exiting so that a fresh process stands by")
            return EXIT_FAILED
        return EXIT_OK

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
        self.state.ready = True
        logger.info("ready: %s as %s", self.state.role, self.state.identity)


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
