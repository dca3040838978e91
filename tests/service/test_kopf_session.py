"""kopf's requests through the operator's session: a reply that breaks off mid-body is retried.

kopf's resource discovery runs once as the operator starts and reads its replies after kopf's
retry loop; a discovery reply cut off used to end the whole operator. Here kopf runs for real
against a real HTTP server (``tests/k8s/cutting_server``) that cuts the first discovery reply
and the first listing of the watched kind.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import kopf
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.kopf_watches.session import session_for
from kopf_scheduler.kopf_watches.watching import apply_settings
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.run_options import RunOptions
from tests.k8s.cutting_server import CUT, WATCH, CuttingServer, serving

CORE_RESOURCES = {
    "kind": "APIResourceList",
    "groupVersion": "v1",
    "resources": [
        {
            "name": "namespaces",
            "singularName": "namespace",
            "namespaced": False,
            "kind": "Namespace",
            "verbs": ["list", "watch", "get"],
        },
    ],
}


def namespaces(request: Any) -> dict[str, Any]:
    return {
        "kind": "NamespaceList",
        "apiVersion": "v1",
        "metadata": {"resourceVersion": "5"},
        "items": [{"metadata": {"name": f"ns-{i}", "resourceVersion": "5"}} for i in range(30)],
    }


@pytest.fixture
async def server() -> AsyncIterator[CuttingServer]:
    running = CuttingServer(
        answers={
            ("GET", "/api"): {"kind": "APIVersions", "versions": ["v1"]},
            ("GET", "/apis"): {"kind": "APIGroupList", "groups": []},
            ("GET", "/api/v1"): CORE_RESOURCES,
            ("GET", "/api/v1/namespaces"): namespaces,
        },
    )
    async with serving(running):
        yield running


async def test_kopf_rides_out_a_discovery_reply_and_a_listing_cut_off_mid_body(
    server: CuttingServer,
) -> None:
    server.cuts[("GET", "/api/v1")] = [CUT]
    server.cuts[("GET", "/api/v1/namespaces")] = [CUT]
    seen: set[str] = set()
    stop = asyncio.Event()
    registry = kopf.OperatorRegistry()

    @kopf.on.login(registry=registry)
    async def login(**_: Any) -> kopf.AiohttpSession:
        return session_for(kopf.ConnectionInfo(server=server.url))

    @kopf.on.startup(registry=registry)
    async def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
        apply_settings(settings)
        settings.networking.error_backoffs = [0.01] * 5

    @kopf.on.event("v1", "namespaces", registry=registry)
    async def on_event(event: Any, **_: Any) -> None:
        seen.add(event["object"]["metadata"]["name"])
        if len(seen) == 30:
            stop.set()

    operator = asyncio.create_task(
        kopf.operator(registry=registry, standalone=True, clusterwide=True, stop_flag=stop)
    )
    done, _ = await asyncio.wait([operator], timeout=20)

    assert operator in done, "kopf did not get all the namespaces within 20 s"
    assert operator.exception() is None
    assert len(seen) == 30
    assert server.requests.count(("GET", "/api/v1")) == 2
    assert not server.cuts[("GET", "/api/v1")]


async def test_a_reply_that_breaks_off_is_a_dropped_connection_and_a_watch_is_left_streaming(
    server: CuttingServer,
) -> None:
    server.cuts[("GET", "/api")] = [CUT, CUT]  # aiohttp itself sends a GET again once
    server.cuts[(WATCH, "/api/v1/namespaces")] = [CUT]
    server.watch_events = [
        {"type": "ADDED", "object": {"metadata": {"name": f"n{i}"}}} for i in range(4)
    ]  # lines of one length: the first half of the stream is two whole events
    credentials = session_for(kopf.ConnectionInfo(server=server.url))
    async with credentials.aiohttp_session as session:
        with pytest.raises(aiohttp.ServerDisconnectedError, match="cut off mid-body"):
            await session.get(f"{server.url}/api")
        assert server.requests == [("GET", "/api"), ("GET", "/api")]
        async with session.get(f"{server.url}/api") as whole:
            assert await whole.json() == {"kind": "APIVersions", "versions": ["v1"]}
        # kopf reads a watch line by line and reconnects on its own; it gets the stream as is.
        async with session.get(f"{server.url}/api/v1/namespaces?watch=true") as watch:
            assert await watch.content.readline()
            with pytest.raises(aiohttp.ClientPayloadError):
                await watch.read()


async def test_the_operator_logs_kopf_in_with_that_session() -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)
        registry = operator._kopf_registry()
        (login,) = [h for h in registry._activities.get_all_handlers() if h.id == "credentials"]
        credentials = await login.fn(logger=logging.getLogger("test"))
        assert isinstance(credentials, kopf.AiohttpSession)
        await credentials.aiohttp_session.close()
    finally:
        await api.close()
