"""The HTTP endpoints an admin and kubelet probes use: /healthz, /readyz and /metrics.

``/healthz`` answers while the event loop runs. ``/readyz`` answers 200 once the initial lists
are in the cache (followers are ready too: they keep warm caches to take over), and says in the
body whether this replica leads. ``/metrics`` serves the Prometheus registry.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest


class HealthServer:
    def __init__(
        self,
        *,
        host: str,
        port: int,
        registry: CollectorRegistry,
        is_synced: Callable[[], bool],
        is_leader: Callable[[], bool],
    ) -> None:
        self.host = host
        self.port = port
        self._registry = registry
        self._is_synced = is_synced
        self._is_leader = is_leader
        self._runner: web.AppRunner | None = None

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    async def _readyz(self, request: web.Request) -> web.Response:
        synced = self._is_synced()
        body = {"synced": synced, "leader": self._is_leader()}
        return web.Response(
            status=200 if synced else 503,
            text=json.dumps(body),
            content_type="application/json",
        )

    async def _metrics(self, request: web.Request) -> web.Response:
        payload = generate_latest(self._registry)
        response = web.Response(body=payload)
        response.headers["Content-Type"] = CONTENT_TYPE_LATEST
        return response

    async def start(self) -> None:
        app = web.Application()
        app.router.add_get("/healthz", self._healthz)
        app.router.add_get("/livez", self._healthz)
        app.router.add_get("/readyz", self._readyz)
        app.router.add_get("/metrics", self._metrics)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        await site.start()
        if self.port == 0 and site._server is not None:  # an ephemeral port was requested
            sockets = getattr(site._server, "sockets", None) or []
            if sockets:
                self.port = sockets[0].getsockname()[1]

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
