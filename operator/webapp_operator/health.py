"""Health endpoints, served by every replica whether it leads or waits.

`/healthz` answers 200 while the process runs (the liveness probe); `/readyz` answers 200 only
on the leader once kopf is watching and the webhook listens (the readiness probe, and what the
local runner waits for). A standby is alive but not ready, so a Service in front of the
webhook sends admission requests to the leader only.
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
    leading: bool = False
    ready: bool = False
    counters: Counters = field(default_factory=Counters)

    def as_json(self) -> str:
        return json.dumps(
            {
                "identity": self.identity,
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
        status = 200 if self.state.ready else 503
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
