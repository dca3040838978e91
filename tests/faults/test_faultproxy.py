"""The fault proxy of the fault suite does what each fault claims, against a small TLS upstream.

The suite's figures are only as good as its faults: a proxy that silently passed everything
would make every fault test green. Each mode is driven at rate 1 here and its effect is seen
from the client's side (status, header, reset) and from the upstream's (forwarded or not).
"""

from __future__ import annotations

import asyncio
import ssl
import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from e2e.support.faultproxy import FaultProxy, Faults, make_certificate, request_kind


class Upstream:
    """Counts bindings, and streams a watch that ends with a 410 ERROR event."""

    def __init__(self) -> None:
        self.bindings = 0

    async def binding(self, request: web.Request) -> web.Response:
        self.bindings += 1
        return web.json_response({"kind": "Status", "status": "Success"}, status=201)

    async def pods(self, request: web.Request) -> web.StreamResponse:
        if request.query.get("watch") != "true":
            return web.json_response({"kind": "PodList", "items": []})
        response = web.StreamResponse()
        await response.prepare(request)
        await response.write(b'{"type":"ADDED","object":{}}\n')
        await response.write(
            b'{"type":"ERROR","object":{"kind":"Status","code":410,'
            b'"message":"too old resource version: 1 (2)"}}\n'
        )
        await response.write_eof()
        return response


@pytest.fixture
async def upstream(tmp_path: Path) -> AsyncIterator[tuple[Upstream, str, Path]]:
    certificate = make_certificate(tmp_path / "upstream")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(certificate.cert, certificate.key)
    state = Upstream()
    app = web.Application()
    app.router.add_post("/api/v1/namespaces/ns/pods/p/binding", state.binding)
    app.router.add_get("/api/v1/pods", state.pods)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=context)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    yield state, f"https://127.0.0.1:{port}", certificate.ca
    await runner.cleanup()


@pytest.fixture
async def proxy(upstream: tuple[Upstream, str, Path], tmp_path: Path) -> AsyncIterator[FaultProxy]:
    _, url, ca = upstream
    running = FaultProxy(url, ca, tmp_path, seed=1)
    await asyncio.to_thread(running.start)
    yield running
    await asyncio.to_thread(running.stop)


def _client(proxy: FaultProxy) -> aiohttp.ClientSession:
    context = ssl.create_default_context(cafile=str(proxy.certificate.ca))
    return aiohttp.ClientSession(
        connector=aiohttp.TCPConnector(ssl=context, force_close=True),
        timeout=aiohttp.ClientTimeout(total=20),
    )


BIND = "/api/v1/namespaces/ns/pods/p/binding"


async def test_without_faults_requests_and_watches_pass_and_410s_are_counted(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path]
) -> None:
    state = upstream[0]
    async with _client(proxy) as client:
        async with client.post(proxy.url + BIND, json={}) as response:
            assert response.status == 201
        async with client.get(proxy.url + "/api/v1/pods?watch=true") as response:
            lines = (await response.read()).splitlines()
    assert state.bindings == 1
    assert len(lines) == 2
    assert proxy.stats["gone"] == 1


@pytest.mark.parametrize("status", [500, 503])
async def test_errors_answer_a_status_without_forwarding(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path], status: int
) -> None:
    proxy.faults = Faults(error_rate=1.0, error_status=status)
    async with _client(proxy) as client, client.post(proxy.url + BIND, json={}) as response:
        assert response.status == status
        assert (await response.json())["code"] == status
    assert upstream[0].bindings == 0


async def test_throttling_answers_429_with_retry_after(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path]
) -> None:
    proxy.faults = Faults(throttle_rate=1.0, retry_after=3)
    async with _client(proxy) as client, client.post(proxy.url + BIND, json={}) as response:
        assert response.status == 429
        assert response.headers["Retry-After"] == "3"
    assert upstream[0].bindings == 0


@pytest.mark.parametrize(("mode", "forwarded"), [("reset_rate", 0), ("reset_after_rate", 1)])
async def test_resets_cut_the_connection_before_or_after_forwarding(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path], mode: str, forwarded: int
) -> None:
    proxy.faults = Faults(**{mode: 1.0})
    async with _client(proxy) as client:
        with pytest.raises(aiohttp.ClientError):
            async with client.post(proxy.url + BIND, json={}) as response:
                await response.read()
    assert upstream[0].bindings == forwarded


async def test_latency_delays_each_request(proxy: FaultProxy) -> None:
    proxy.faults = Faults(latency=0.5)
    started = time.monotonic()
    async with _client(proxy) as client, client.post(proxy.url + BIND, json={}) as response:
        assert response.status == 201
    assert time.monotonic() - started >= 0.5


async def test_a_partition_holds_requests_and_drops_them_at_heal(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path]
) -> None:
    await asyncio.to_thread(proxy.partition)
    healer = threading.Timer(1.0, proxy.heal)
    healer.start()
    try:
        async with _client(proxy) as client:
            with pytest.raises(aiohttp.ClientError):
                async with client.post(proxy.url + BIND, json={}) as response:
                    await response.read()
            assert upstream[0].bindings == 0
            async with client.post(proxy.url + BIND, json={}) as response:
                assert response.status == 201
    finally:
        healer.join()
    assert upstream[0].bindings == 1
    assert proxy.stats["held"] == 1


async def test_a_server_gone_resets_every_new_request_until_heal(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path]
) -> None:
    await asyncio.to_thread(lambda: proxy.partition(hold=False))
    async with _client(proxy) as client:
        for _ in range(3):
            with pytest.raises(aiohttp.ClientError):
                async with client.post(proxy.url + BIND, json={}) as response:
                    await response.read()
        await asyncio.to_thread(proxy.heal)
        async with client.post(proxy.url + BIND, json={}) as response:
            assert response.status == 201
    assert upstream[0].bindings == 1
    assert (proxy.stats["refused"], proxy.stats["held"]) == (3, 0)


async def test_a_partition_can_start_right_after_a_given_request_is_answered(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path]
) -> None:
    proxy.partition_after("GET", "/api/v1/pods")
    healer: threading.Timer | None = None
    async with _client(proxy) as client:
        async with client.post(proxy.url + BIND, json={}) as response:
            assert response.status == 201  # not the request named: it passes
        async with client.get(proxy.url + "/api/v1/pods") as response:
            assert response.status == 200
            assert (await response.json())["kind"] == "PodList"
        assert proxy.partitioned
        healer = threading.Timer(1.0, proxy.heal)
        healer.start()
        try:
            with pytest.raises(aiohttp.ClientError):
                async with client.post(proxy.url + BIND, json={}) as response:
                    await response.read()
        finally:
            healer.join()
    assert upstream[0].bindings == 1
    assert (proxy.stats["partitions"], proxy.stats["held"]) == (1, 1)


async def test_the_first_answer_of_each_kind_is_cut_off_mid_body_and_the_next_passes(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path]
) -> None:
    proxy.faults = Faults(cut_each_kind_once=True)
    async with _client(proxy) as client:
        for url in (BIND, "/api/v1/pods", "/api/v1/pods?watch=true"):
            async with client.request("POST" if url == BIND else "GET", proxy.url + url) as cut:
                assert cut.status in (200, 201)  # the headers came whole
                with pytest.raises(aiohttp.ClientPayloadError):
                    await cut.read()
        async with client.post(proxy.url + BIND, json={}) as response:
            assert response.status == 201
            assert (await response.json())["status"] == "Success"
        async with client.get(proxy.url + "/api/v1/pods?watch=true") as response:
            assert len((await response.read()).splitlines()) == 2
    assert upstream[0].bindings == 2
    assert proxy.stats.snapshot().keys() >= {
        "cut create pods/binding",
        "cut list pods",
        "cut watch pods",
    }


@pytest.mark.parametrize(
    ("method", "path", "watch", "kind"),
    [
        ("GET", "/apis", False, "discovery"),
        ("GET", "/apis/policy/v1", False, "discovery"),
        ("GET", "/version", False, "discovery"),
        ("GET", "/api/v1/pods", False, "list pods"),
        ("GET", "/api/v1/namespaces", False, "list namespaces"),
        ("GET", "/api/v1/nodes", True, "watch nodes"),
        ("POST", "/api/v1/namespaces/ns/pods/p/binding", False, "create pods/binding"),
        ("PATCH", "/api/v1/namespaces/ns/pods/p/status", False, "patch pods/status"),
        ("DELETE", "/api/v1/namespaces/ns/pods/p", False, "delete pods"),
        ("POST", "/apis/events.k8s.io/v1/namespaces/ns/events", False, "create events"),
        ("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", False, "update leases"),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", False, "get leases"),
    ],
)
def test_request_kinds(method: str, path: str, watch: bool, kind: str) -> None:
    assert request_kind(method, path, watch) == kind


async def test_a_partition_can_wait_for_several_requests_answered_in_any_order(
    proxy: FaultProxy, upstream: tuple[Upstream, str, Path]
) -> None:
    proxy.partition_after_all([("GET", "/api/v1/pods"), ("POST", BIND)], hold=False)
    async with _client(proxy) as client:
        async with client.get(proxy.url + "/api/v1/pods") as response:
            assert response.status == 200
            await response.read()
        assert not proxy.partitioned  # the binding is still awaited
        async with client.post(proxy.url + BIND, json={}) as response:
            assert response.status == 201
            await response.read()
        assert proxy.partitioned  # in force by the time the whole answer is read
        with pytest.raises(aiohttp.ClientError):
            async with client.get(proxy.url + "/api/v1/pods") as response:
                await response.read()
    proxy.heal()
    assert upstream[0].bindings == 1
