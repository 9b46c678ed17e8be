"""Health endpoints, served by every replica whatever its role.

`/healthz` answers 200 while the process runs (the liveness probe) with a JSON summary: role,
leading, ready and the reconcile counters. `/readyz` answers 200 when the replica can do its
job: the leader once kopf watches and its webhook listens, a webhook-only replica once it
serves, and a standby as long as it waits for the Lease (it is healthy and will take over; a
not-Ready standby would stall every rolling update of a two-replica Deployment).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from aiohttp import web

__all__ = ["Counters", "HealthServer", "HealthState"]


@dataclass
class Counters:
    """What this process did since it started leading (tests and benchmarks read them)."""

    reconciles: int = 0
    changes: int = 0
    failures: int = 0


@dataclass
class HealthState:
    identity: str
    role: str = "starting"  # starting | standby | leader | webhook | stopping
    leading: bool = False
    ready: bool = False  # doing its job: kopf runs (and the webhook listens)
    counters: Counters = field(default_factory=Counters)

    def as_json(self) -> str:
        return json.dumps(
            {
                "identity": self.identity,
                "role": self.role,
                "leading": self.leading,
                "ready": self.ready,
                **asdict(self.counters),
            }
        )


class HealthServer:
    def __init__(self, state: HealthState, host: str, port: int) -> None:
        self.state = state
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None

    async def _healthz(self, _: web.Request) -> web.Response:
        return web.Response(text=self.state.as_json(), content_type="application/json")

    async def _readyz(self, _: web.Request) -> web.Response:
        status = 200 if self.state.ready or self.state.role == "standby" else 503
        return web.Response(
            status=status, text=self.state.as_json(), content_type="application/json"
        )

    async def start(self) -> None:
        app = web.Application()
        app.add_routes([web.get("/healthz", self._healthz), web.get("/readyz", self._readyz)])
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None)
        await self._runner.setup()
        await web.TCPSite(self._runner, self.host, self.port).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
