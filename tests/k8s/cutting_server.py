"""A real HTTP server whose replies break off mid-body, for the clients' handling of cut replies.

Each request is answered with a JSON body in chunked transfer encoding, as the API server sends
its larger replies. A request that matches a planned cut gets its status line, its headers and
the first part of its body, and then one of two endings:

- ``CUT``: the connection is reset (the API server stopped, a load balancer dropped it);
- ``BROKEN``: the next chunk header is not one, as when bytes of another stream got in.

Either way the client holds a reply it cannot finish reading.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

WATCH = "WATCH"
"""The method under which ``cuts`` plans the cut of a watch of a path."""
CUT = "cut"
BROKEN = "broken"

Answer = Callable[[web.Request], Mapping[str, Any]]


@dataclass
class CuttingServer:
    """Answers ``GET|POST|... path`` with ``answers[(method, path)]`` (a body, or a function of
    the request that returns one); the next ``cuts[(method, path)]`` requests are cut off
    (``CUT`` or ``BROKEN`` each, in order; ``WATCH`` as the method for watches). Watches (``watch=true``) stream ``watch_events``
    and then stay open until the client goes."""

    answers: dict[tuple[str, str], Mapping[str, Any] | Answer] = field(default_factory=dict)
    cuts: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    watch_events: list[dict[str, Any]] = field(default_factory=list)
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""

    async def handle(self, request: web.Request) -> web.StreamResponse:
        watch = request.query.get("watch") == "true"
        key = (WATCH if watch else request.method, request.path)
        self.requests.append((request.method, request.path + ("?watch" if watch else "")))
        if watch:
            payload = b"".join(json.dumps(event).encode() + b"\n" for event in self.watch_events)
        else:
            answer = self.answers.get(key)
            if answer is None:
                return web.json_response({"kind": "Status", "code": 404}, status=404)
            body = answer(request) if callable(answer) else answer
            payload = json.dumps(body).encode()
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        planned = self.cuts.get(key)
        if planned:
            ending = planned.pop(0)
            await response.write(payload[: max(1, len(payload) // 2)])
            await asyncio.sleep(0.05)  # the client has the headers and the first part
            transport = request.transport
            assert transport is not None
            if ending == BROKEN:
                transport.write(b"not a chunk header\r\n")
                await asyncio.sleep(0.05)
            transport.abort()
            return response
        await response.write(payload)
        if watch:
            while request.transport is not None and not request.transport.is_closing():
                await asyncio.sleep(0.01)
            return response
        await response.write_eof()
        return response


@asynccontextmanager
async def serving(server: CuttingServer) -> AsyncIterator[CuttingServer]:
    """Serve ``server`` on a free local port (``server.url``) for the duration of the block."""
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", server.handle)
    runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    sockets = site._server.sockets if site._server is not None else ()  # type: ignore[union-attr]
    server.url = f"http://127.0.0.1:{sockets[0].getsockname()[1]}"
    try:
        yield server
    finally:
        await runner.cleanup()
