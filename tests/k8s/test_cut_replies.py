"""Replies that break off mid-body are sent again like dropped connections, for every kind of
request the scheduler makes, and a watch that breaks off is resumed.

The server is a real HTTP server (``cutting_server``). aiohttp reads bodies with its C parser
when its extension is installed and with a pure-Python parser otherwise; the two report a broken
body differently (the C parser as ``ClientPayloadError``, the Python parser, for a broken chunk,
as the bare ``TransferEncodingError`` that once ended the process), so every case runs with both.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from typing import Any

import aiohttp.client_proto
import aiohttp.http_parser
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.ratelimit import Unlimited
from kopf_scheduler.k8s.reflector import ADDED, Reflector
from tests.clock import FakeClock
from tests.k8s.cutting_server import BROKEN, CUT, WATCH, CuttingServer, serving
from tests.k8s.support import START

PODS = "/api/v1/pods"
POD = "/api/v1/namespaces/ns/pods/p"


@pytest.fixture(params=["c-parser-cut", "python-parser-broken-chunk"])
def ending(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """How the reply breaks off, and with which of aiohttp's parsers it is read."""
    if request.param.startswith("python"):
        monkeypatch.setattr(
            aiohttp.client_proto, "HttpResponseParser", aiohttp.http_parser.HttpResponseParserPy
        )
        yield BROKEN
    else:
        # The C parser answers a broken chunk header by waiting for the request's timeout;
        # a reset connection is what it reports at once.
        yield CUT


@pytest.fixture
async def server() -> AsyncIterator[CuttingServer]:
    async with serving(CuttingServer()) as running:
        yield running


@pytest.fixture
async def api(server: CuttingServer) -> AsyncIterator[Api]:
    client = ApiClient(Configuration(host=server.url))
    api = Api(client, limiter=Unlimited(), clock=FakeClock(START), timeout=10.0)
    yield api
    await api.close()


def pod(name: str, resource_version: str = "1") -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": resource_version},
    }


REQUESTS = [
    pytest.param("GET", PODS, None, id="list"),
    pytest.param("POST", f"{POD}/binding", {"kind": "Binding"}, id="binding"),
    pytest.param("PATCH", f"{POD}/status", {"status": {}}, id="status-patch"),
    pytest.param("DELETE", POD, {"kind": "DeleteOptions"}, id="delete"),
    pytest.param("POST", "/api/v1/namespaces/ns/events", {"kind": "Event"}, id="event"),
    pytest.param(
        "PUT",
        "/apis/coordination.k8s.io/v1/namespaces/ns/leases/kopf-scheduler",
        {"kind": "Lease"},
        id="lease",
    ),
]


@pytest.mark.parametrize(("method", "path", "body"), REQUESTS)
async def test_a_reply_that_breaks_off_is_sent_again_and_the_whole_reply_returned(
    server: CuttingServer, api: Api, ending: str, method: str, path: str, body: Any
) -> None:
    whole = {"kind": "PodList", "metadata": {"resourceVersion": "7"}, "items": [pod("a")] * 20}
    server.answers[(method, path)] = whole
    server.cuts[(method, path)] = [ending]

    reply = await api.request(method, path, body)

    assert reply == whole
    assert server.requests == [(method, path), (method, path)]


async def test_a_watch_that_breaks_off_is_resumed_and_the_process_goes_on(
    server: CuttingServer, api: Api, ending: str
) -> None:
    server.answers[("GET", PODS)] = {
        "kind": "PodList",
        "metadata": {"resourceVersion": "1"},
        "items": [],
    }
    server.watch_events = [{"type": ADDED, "object": pod(f"p{i}", str(i + 2))} for i in range(8)]
    server.cuts[(WATCH, PODS)] = [ending]
    seen: list[str] = []
    reflector = Reflector(api, PODS, lambda _type, raw: seen.append(raw["metadata"]["name"]))
    await reflector.list()

    running = asyncio.create_task(reflector.run())
    try:
        for _ in range(500):
            if len(set(seen)) == 8 or running.done():
                break
            await asyncio.sleep(0.01)
        assert not running.done(), running.exception()
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)

    assert set(seen) == {f"p{i}" for i in range(8)}
    assert server.requests.count(("GET", f"{PODS}?watch")) == 2
