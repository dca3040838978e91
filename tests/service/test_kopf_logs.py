"""kopf's line per retried request: folded into the outage report when no reply came, kept (as a
warning) when the server answered, and every other line left alone."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from kopf_scheduler.k8s.outage import OutageReport
from kopf_scheduler.service.kopf_logs import fold_kopf_retries
from tests.clock import FakeClock
from tests.k8s.support import START

KOPF = "kopf._core.reactor.observation"
CONNECTOR = (
    "ClientConnectorError(ConnectionKey(host='127.0.0.1', port=6443, is_ssl=True, ssl=True, "
    "proxy=None, proxy_auth=None, proxy_headers_hash=None), ConnectionRefusedError(111, "
    "'Connect call failed'))"
)


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def collected() -> Iterator[Collect]:
    """A handler on the root logger, as ``configure_logging`` installs one."""
    handler = Collect()
    root = logging.getLogger()
    root.addHandler(handler)
    try:
        yield handler
    finally:
        root.removeHandler(handler)


def test_retries_without_a_reply_go_to_the_outage_report(collected: Collect) -> None:
    outage = OutageReport(FakeClock(START))
    unfold = fold_kopf_retries(outage)
    try:
        log = logging.getLogger(KOPF)
        for attempt in range(1, 4):
            log.error(
                f"Request attempt #{attempt} failed; will retry: GET https://k/api -> {CONNECTOR}"
            )
        log.error("Request attempt #4 failed; TCP closed; will re-authenticate: GET https://k/apis")
    finally:
        unfold()

    assert collected.records == []
    assert (outage.down, outage.failed_requests) == (True, 4)


def test_retries_the_server_answered_stay_as_warnings(collected: Collect) -> None:
    outage = OutageReport(FakeClock(START))
    unfold = fold_kopf_retries(outage)
    try:
        logging.getLogger(KOPF).error(
            "Request attempt #1 failed; will retry: GET https://k/apis/policy/v1 -> "
            "APIForbiddenError('poddisruptionbudgets.policy is forbidden')"
        )
        logging.getLogger(KOPF).error("Something else went wrong")
        logging.getLogger("kopf_scheduler.other").error(
            f"Request attempt #1 failed; will retry: GET https://k/api -> {CONNECTOR}"
        )
    finally:
        unfold()

    assert [(r.name, r.levelname) for r in collected.records] == [
        (KOPF, "WARNING"),
        (KOPF, "ERROR"),
        ("kopf_scheduler.other", "ERROR"),
    ]
    assert not outage.down


def test_taken_off_again_kopf_lines_pass_unchanged(collected: Collect) -> None:
    outage = OutageReport(FakeClock(START))
    fold_kopf_retries(outage)()
    logging.getLogger(KOPF).error(
        f"Request attempt #1 failed; will retry: GET https://k/api -> {CONNECTOR}"
    )
    assert [r.levelname for r in collected.records] == ["ERROR"]
    assert not outage.down
