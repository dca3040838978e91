"""An API server outage is told once when it starts and once when it ends, not once per retry.

Requests run against a port nothing listens on (no reply at all), then against kmock (replies);
the log is what an operator would read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any

import kmock
import pytest

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.outage import OutageReport
from kopf_scheduler.k8s.ratelimit import Unlimited
from kopf_scheduler.k8s.reflector import Reflector
from kopf_scheduler.k8s.retry import NO_RETRY
from kopf_scheduler.ports import ApiError
from tests.clock import FakeClock
from tests.k8s.support import START, reply

PODS = "/api/v1/pods"


def closed_url() -> str:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{probe.getsockname()[1]}"


def logged(caplog: pytest.LogCaptureFixture, logger: str) -> list[tuple[str, dict[str, Any]]]:
    """``(level, fields)`` of each structlog line of ``logger``."""
    return [
        (record.levelname, record.msg)
        for record in caplog.records
        if record.name == logger and isinstance(record.msg, dict)
    ]


@contextlib.contextmanager
def pointed_at(api: Api, url: str) -> Iterator[None]:
    original = api.client.configuration.host
    api.client.configuration.host = url
    try:
        yield
    finally:
        api.client.configuration.host = original


async def test_an_outage_is_one_warning_and_its_end_one_line(
    kmock: kmock.RawHandler, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    kmock["get /version"] << {"major": "1"}
    api.outage.arm()
    lease_api = api.with_limiter(Unlimited())
    caplog.set_level(logging.DEBUG)

    with pointed_at(api, closed_url()):
        for caller in (api, lease_api, api, lease_api, api):
            with pytest.raises(ApiError):
                await caller.request("GET", "/version", retry=NO_RETRY)
    assert api.outage.down
    await lease_api.request("GET", "/version")
    await api.request("GET", "/version")

    lines = logged(caplog, "kopf_scheduler.k8s.outage")
    assert [(level, fields["event"]) for level, fields in lines] == [
        ("WARNING", "api_unreachable"),
        ("INFO", "api_reachable"),
    ]
    assert lines[0][1]["reason"].startswith("ClientConnectorError: Cannot connect to host")
    assert lines[1][1]["failed_requests"] == 5
    assert not api.outage.down


async def test_a_reply_with_an_error_status_is_not_an_outage(
    kmock: kmock.RawHandler, api: Api, caplog: pytest.LogCaptureFixture
) -> None:
    kmock["get /version"] << reply(503, "ServiceUnavailable", "etcd is unhappy")
    api.outage.arm()

    with pytest.raises(ApiError):
        await api.request("GET", "/version", retry=NO_RETRY)

    assert not api.outage.down
    assert logged(caplog, "kopf_scheduler.k8s.outage") == []


def test_before_it_is_armed_an_outage_is_counted_but_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    report = OutageReport(FakeClock(START))
    report.no_reply("refused")
    report.no_reply("refused")
    assert (report.down, report.failed_requests) == (True, 2)
    report.replied()
    assert not report.down
    assert logged(caplog, "kopf_scheduler.k8s.outage") == []


async def test_a_watch_without_a_reply_leaves_the_telling_to_the_outage_report(
    api: Api, clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    api.outage.arm()
    reflector = Reflector(api, PODS, lambda event_type, raw: None)
    reflector.resource_version = "5"

    with pointed_at(api, closed_url()):
        task = asyncio.create_task(reflector.run())
        while len(clock.sleeps) < 3:
            await asyncio.sleep(0.01)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    watch_lines = logged(caplog, "kopf_scheduler.k8s.reflector")
    assert {(level, fields["event"]) for level, fields in watch_lines} == {
        ("DEBUG", "watch_failed")
    }
    outage_lines = logged(caplog, "kopf_scheduler.k8s.outage")
    assert [fields["event"] for _, fields in outage_lines] == ["api_unreachable"]
