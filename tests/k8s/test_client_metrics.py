"""client-go's request metrics, reported by the API client: one count per attempt, one duration
per request, the server's host:port as ``host``."""

from __future__ import annotations

import urllib.parse
from collections.abc import AsyncIterator
from typing import Any

import kmock
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler import metric_names as m
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.metrics import PrometheusMetrics
from kopf_scheduler.k8s.ratelimit import Unlimited
from kopf_scheduler.k8s.retry import NO_RETRY
from kopf_scheduler.ports import ApiError
from tests.clock import FakeClock
from tests.k8s.support import START, ok, reply

PODS = "/api/v1/pods"


@pytest.fixture
def metrics() -> PrometheusMetrics:
    return PrometheusMetrics()


@pytest.fixture
async def measured_api(
    kmock: kmock.RawHandler, clock: FakeClock, metrics: PrometheusMetrics
) -> AsyncIterator[Api]:
    client = ApiClient(Configuration(host=str(kmock.url).rstrip("/")))
    api = Api(client, limiter=Unlimited(), clock=clock, timeout=10.0, metrics=metrics)
    yield api
    await api.close()


def host_of(kmock: kmock.RawHandler) -> str:
    return urllib.parse.urlsplit(str(kmock.url)).netloc


def requests(metrics: PrometheusMetrics, code: str, method: str, host: str) -> float | None:
    labels = {"code": code, "method": method, "host": host}
    return metrics.registry.get_sample_value(m.REST_CLIENT_REQUESTS, labels)


def durations(metrics: PrometheusMetrics, verb: str, host: str) -> tuple[float, float] | None:
    labels = {"verb": verb, "host": host}
    count = metrics.registry.get_sample_value(f"{m.REST_CLIENT_REQUEST_DURATION}_count", labels)
    total = metrics.registry.get_sample_value(f"{m.REST_CLIENT_REQUEST_DURATION}_sum", labels)
    return None if count is None or total is None else (count, total)


async def test_every_attempt_is_counted_and_the_request_timed_once(
    kmock: kmock.RawHandler,
    measured_api: Api,
    metrics: PrometheusMetrics,
    clock: FakeClock,
) -> None:
    kmock[f"get {PODS}"][:2] << (lambda: reply(503, "ServiceUnavailable", "busy"))
    kmock[f"get {PODS}"] << (lambda: ok({"kind": "PodList", "items": []}))

    await measured_api.request("GET", PODS)

    host = host_of(kmock)
    assert requests(metrics, "503", "GET", host) == 2
    assert requests(metrics, "200", "GET", host) == 1
    assert sum(clock.sleeps) > 0
    assert durations(metrics, "GET", host) == (1, pytest.approx(sum(clock.sleeps)))  # backoff too


async def test_failed_requests_are_counted_under_their_code(
    kmock: kmock.RawHandler, measured_api: Api, metrics: PrometheusMetrics
) -> None:
    kmock["post /api/v1/namespaces/team/pods/web/binding"] << (
        lambda: reply(409, "Conflict", "already bound")
    )

    with pytest.raises(ApiError):
        await measured_api.request("POST", "/api/v1/namespaces/team/pods/web/binding", {})

    host = host_of(kmock)
    assert requests(metrics, "409", "POST", host) == 1
    assert durations(metrics, "POST", host) == (1, 0)


async def test_an_attempt_without_a_reply_is_an_error_code() -> None:
    metrics = PrometheusMetrics()
    client = ApiClient(Configuration(host="http://127.0.0.1:9"))  # nothing listens there
    api = Api(client, limiter=Unlimited(), clock=FakeClock(START), timeout=5.0, metrics=metrics)
    try:
        with pytest.raises(ApiError):
            await api.request("GET", PODS, retry=NO_RETRY)
    finally:
        await api.close()

    assert requests(metrics, "<error>", "GET", "127.0.0.1:9") == 1
    assert durations(metrics, "GET", "127.0.0.1:9") is not None


async def test_a_watch_is_counted_but_not_timed(
    kmock: kmock.RawHandler, measured_api: Api, metrics: PrometheusMetrics
) -> None:
    async def stream() -> AsyncIterator[dict[str, Any]]:
        yield {"type": "BOOKMARK", "object": {"metadata": {"resourceVersion": "5"}}}

    kmock[f"get {PODS}"] << stream

    events = [e async for e in measured_api.watch(PODS, {"watch": "true"}, timeout=5.0)]

    assert [e["type"] for e in events] == ["BOOKMARK"]
    host = host_of(kmock)
    assert requests(metrics, "200", "GET", host) == 1
    assert durations(metrics, "GET", host) is None


async def test_a_sibling_with_its_own_limiter_reports_to_the_same_metrics(
    kmock: kmock.RawHandler, measured_api: Api, metrics: PrometheusMetrics
) -> None:
    kmock["put /apis/coordination.k8s.io/v1/namespaces/ns/leases/l"] << {"kind": "Lease"}
    sibling = measured_api.with_limiter(Unlimited())

    await sibling.request("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l", {})

    assert requests(metrics, "200", "PUT", host_of(kmock)) == 1
