"""Retries: which replies are retried, how long between attempts, and when to give up."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import kmock
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.errors import TransportError
from kopf_scheduler.k8s.ratelimit import Unlimited
from kopf_scheduler.k8s.retry import RetryPolicy, parse_retry_after
from kopf_scheduler.ports import ApiError, NotFoundError
from tests.clock import FakeClock
from tests.k8s.support import START, reply, status

PATH = "/api/v1/namespaces/team/pods/web"


def too_many(retry_after: str | None) -> kmock.Response:
    headers = {"Retry-After": retry_after} if retry_after is not None else None
    return kmock.Response(
        status=429, headers=headers, payload=status(429, "TooManyRequests", "slow down")
    )


@pytest.mark.parametrize(
    ("retry", "status_code", "retry_after", "delay"),
    [
        pytest.param(1, 503, None, 0.2, id="first-backoff"),
        pytest.param(2, 503, None, 0.4, id="doubles"),
        pytest.param(5, 500, None, 3.2, id="fifth"),
        pytest.param(9, 500, None, 5.0, id="capped"),
        pytest.param(1, 429, 3.0, 3.0, id="429-honours-retry-after"),
        pytest.param(3, 429, 0.0, 0.0, id="429-retry-after-zero"),
        pytest.param(1, 429, 120.0, 30.0, id="429-retry-after-bounded"),
        pytest.param(1, 503, 2.0, 2.0, id="5xx-waits-longer-of-both"),
        pytest.param(4, 503, 1.0, 1.6, id="5xx-backoff-wins"),
    ],
)
def test_policy_delay(
    retry: int, status_code: int, retry_after: float | None, delay: float
) -> None:
    assert RetryPolicy().delay(retry, status_code, retry_after) == pytest.approx(delay)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        pytest.param({"Retry-After": "2"}, 2.0, id="seconds"),
        pytest.param({"Retry-After": " 1.5 "}, 1.5, id="fractional"),
        pytest.param({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, None, id="http-date"),
        pytest.param({"Retry-After": "-1"}, None, id="negative"),
        pytest.param({}, None, id="absent"),
    ],
)
def test_parse_retry_after(headers: dict[str, str], seconds: float | None) -> None:
    assert parse_retry_after(headers) == seconds


async def test_429_waits_as_told_then_succeeds(
    kmock: kmock.RawHandler, api: Api, clock: FakeClock
) -> None:
    kmock[f"get {PATH}"][:1] << (lambda: too_many("3"))
    kmock[f"get {PATH}"] << {"kind": "Pod", "metadata": {"name": "web"}}

    result = await api.request("GET", PATH)

    assert result["metadata"]["name"] == "web"
    assert len(kmock[f"get {PATH}"]) == 2
    assert clock.sleeps == [3.0]


async def test_429_without_retry_after_backs_off(
    kmock: kmock.RawHandler, api: Api, clock: FakeClock
) -> None:
    kmock[f"get {PATH}"][:2] << (lambda: too_many(None))
    kmock[f"get {PATH}"] << {"kind": "Pod"}

    await api.request("GET", PATH)

    assert clock.sleeps == pytest.approx([0.2, 0.4])


async def test_503_twice_then_success(kmock: kmock.RawHandler, api: Api, clock: FakeClock) -> None:
    kmock[f"post {PATH}/binding"][:2] << (lambda: reply(503, "ServiceUnavailable", "busy"))
    kmock[f"post {PATH}/binding"] << 201 << {"kind": "Status", "status": "Success"}

    await api.request("POST", f"{PATH}/binding", {"kind": "Binding"})

    requests = list(kmock[f"post {PATH}/binding"])
    assert len(requests) == 3
    assert all(r.data == {"kind": "Binding"} for r in requests)
    assert clock.sleeps == pytest.approx([0.2, 0.4])


async def test_gives_up_after_the_last_attempt(
    kmock: kmock.RawHandler, api: Api, clock: FakeClock
) -> None:
    kmock[f"get {PATH}"] << (lambda: reply(500, "InternalError", "etcd is down"))

    with pytest.raises(ApiError) as info:
        await api.request("GET", PATH)

    assert (info.value.status, info.value.message) == (500, "etcd is down")
    assert len(kmock[f"get {PATH}"]) == 5
    assert clock.sleeps == pytest.approx([0.2, 0.4, 0.8, 1.6])


@pytest.mark.parametrize(
    ("code", "reason", "kind"),
    [
        pytest.param(400, "BadRequest", ApiError, id="400"),
        pytest.param(401, "Unauthorized", ApiError, id="401"),
        pytest.param(403, "Forbidden", ApiError, id="403"),
        pytest.param(404, "NotFound", NotFoundError, id="404"),
        pytest.param(422, "Invalid", ApiError, id="422"),
    ],
)
async def test_other_4xx_are_final(
    kmock: kmock.RawHandler,
    api: Api,
    clock: FakeClock,
    code: int,
    reason: str,
    kind: type[ApiError],
) -> None:
    kmock[f"get {PATH}"] << (lambda: reply(code, reason, "no"))

    with pytest.raises(kind) as info:
        await api.request("GET", PATH)

    assert info.value.status == code
    assert len(kmock[f"get {PATH}"]) == 1
    assert clock.sleeps == []


async def test_a_per_call_policy_overrides_the_default(
    kmock: kmock.RawHandler, api: Api, clock: FakeClock
) -> None:
    kmock[f"get {PATH}"] << (lambda: reply(503, "ServiceUnavailable", "busy"))

    with pytest.raises(ApiError):
        await api.request("GET", PATH, retry=RetryPolicy(attempts=1))

    assert len(kmock[f"get {PATH}"]) == 1
    assert clock.sleeps == []


@pytest.fixture
def closed_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    yield port


async def test_connection_errors_are_retried_then_raised_as_transport_errors(
    closed_port: int,
) -> None:
    clock = FakeClock(START)
    client = ApiClient(Configuration(host=f"http://127.0.0.1:{closed_port}"))
    api = Api(client, limiter=Unlimited(), clock=clock, retry=RetryPolicy(attempts=3))
    try:
        with pytest.raises(TransportError) as info:
            await api.request("GET", PATH)
    finally:
        await api.close()

    assert info.value.status == 0
    assert clock.sleeps == pytest.approx([0.2, 0.4])
