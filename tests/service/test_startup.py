"""Starting while the API server is away, refuses the credentials or lacks a permission: one
warning per attempt naming the problem and the wait, retried until it works, as kube-scheduler's
informers retry; and kopf's own requests never give up."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator
from typing import Any

import kmock
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.ratelimit import Unlimited
from kopf_scheduler.service.operator_assembly import build_operator
from kopf_scheduler.service.run_options import RunOptions
from kopf_scheduler.service.startup import EndlessBackoffs, list_until_synced
from tests.k8s.support import reply

VERSION = {"major": "1", "minor": "34", "gitVersion": "v1.34.10"}
FORBIDDEN = (
    'pods is forbidden: User "system:serviceaccount:kube-system:kopf-scheduler" cannot list '
    'resource "pods" in API group "" at the cluster scope'
)


@pytest.fixture
async def api(kmock: kmock.RawHandler) -> AsyncIterator[Api]:
    client = ApiClient(Configuration(host=str(kmock.url).rstrip("/")))
    api = Api(client, limiter=Unlimited(), timeout=10.0)
    yield api
    await api.close()


def warnings_logged(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [
        record.msg
        for record in caplog.records
        if isinstance(record.msg, dict) and record.msg.get("event") == "api_unavailable"
    ]


async def test_rejected_credentials_are_named_and_retried_until_accepted(
    kmock: kmock.RawHandler, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    kmock["get /version"][:2] << (lambda: reply(401, "Unauthorized", "Unauthorized"))
    kmock["get /version"] << VERSION
    listed: list[str] = []

    async def list_all() -> None:
        listed.append("all")

    with caplog.at_level(logging.INFO, logger="kopf_scheduler.service"):
        synced = await list_until_synced(api, list_all, asyncio.Event(), delays=[0, 0, 0])

    assert synced and listed == ["all"]
    assert [(w["reason"], w["attempt"]) for w in warnings_logged(caplog)] == [
        ("the API server rejected the credentials (401 Unauthorized): Unauthorized", 1),
        ("the API server rejected the credentials (401 Unauthorized): Unauthorized", 2),
    ]


async def test_a_missing_permission_is_named_with_the_wait_before_the_next_try(
    kmock: kmock.RawHandler, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    kmock["get /version"] << VERSION
    kmock["get /api/v1/pods"][:1] << (lambda: reply(403, "Forbidden", FORBIDDEN))
    kmock["get /api/v1/pods"] << {"kind": "PodList", "items": [], "metadata": {}}

    async def list_all() -> None:
        await api.list("/api/v1/pods")

    with caplog.at_level(logging.INFO, logger="kopf_scheduler.service"):
        synced = await list_until_synced(api, list_all, asyncio.Event(), delays=[0.01, 0.02])

    assert synced
    [warning] = warnings_logged(caplog)
    assert warning["reason"] == f"a permission is missing (403 Forbidden): {FORBIDDEN}"
    assert warning["retry_in"] == 0.01


async def test_a_server_that_does_not_answer_is_reported_after_the_probe_timeout(
    kmock: kmock.RawHandler, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    async def hang() -> dict[str, Any]:
        await asyncio.sleep(3600)
        return VERSION

    kmock["get /version"] << hang

    async def list_all() -> None:
        raise AssertionError("the lists start only after the server answered")

    with caplog.at_level(logging.INFO, logger="kopf_scheduler.service"):
        synced = await list_until_synced(
            api, list_all, asyncio.Event(), delays=[0], probe_timeout=0.05
        )

    assert not synced
    [warning] = warnings_logged(caplog)
    assert warning["reason"] == "no reply from the API server within 0.05s"


async def test_refused_connections_are_retried_until_stopped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")), limiter=Unlimited())
    stop = asyncio.Event()
    attempts = 0

    def delays() -> Any:
        nonlocal attempts
        for delay in itertools.repeat(0.0):
            attempts += 1
            if attempts == 3:
                stop.set()
            yield delay

    async def list_all() -> None:
        raise AssertionError("never reached")

    try:
        with caplog.at_level(logging.INFO, logger="kopf_scheduler.service"):
            synced = await list_until_synced(api, list_all, stop, delays=delays())
    finally:
        await api.close()

    assert not synced
    logged = warnings_logged(caplog)
    assert len(logged) == 3
    assert all(w["reason"].startswith("cannot connect to the API server: ") for w in logged)
    assert all(w["server"] == "http://127.0.0.1:9" for w in logged)


def test_kopf_requests_back_off_for_ever_from_one_second_to_thirty() -> None:
    backoffs = EndlessBackoffs()
    first = list(itertools.islice(backoffs, 8))
    assert first == [1, 2, 4, 8, 16, 30, 30, 30]
    assert list(itertools.islice(backoffs, 2)) == [1, 2]  # a fresh sequence for every request
    assert next(itertools.islice(backoffs, 10_000, None)) == 30


async def test_the_operator_gives_kopf_the_endless_backoffs() -> None:
    import kopf

    api = Api(ApiClient(Configuration(host="http://127.0.0.1:9")))
    try:
        operator = build_operator(default_config(), RunOptions(), api)
        registry = operator._kopf_registry()
        settings = kopf.OperatorSettings()
        for handler in registry._activities.get_all_handlers():
            if handler.activity == "startup" and handler.id == "configure-kopf":
                await handler.fn(settings=settings, logger=logging.getLogger("test"))
    finally:
        await api.close()
    assert isinstance(settings.networking.error_backoffs, EndlessBackoffs)
