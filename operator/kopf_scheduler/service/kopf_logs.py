"""kopf's line per retried request, folded into the API client's outage report.

kopf retries every failed request (its watches of PDBs, PriorityClasses, namespaces and the
storage objects, and the resource discovery it runs at start) and logs each retry at error
level: ``Request attempt #3 failed; will retry: GET https://... -> ClientConnectorError(...)``.
During an outage that is a dozen error lines every few seconds for something the scheduler
survives, next to the one ``api_unreachable`` warning and the one ``api_reachable`` line the
outage report gives (``k8s/outage.py``). This filter, on the process's log handlers, hands the
retries that got no reply to that report instead of printing them; the retries of requests the
server answered with an error (403, 429, 5xx) stay, as warnings, because kopf retries them and
they may name a missing permission. kopf offers no hook for this, only its log messages; a
message worded otherwise (another kopf version) is left as it is.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable

from kopf_scheduler.k8s.outage import OutageReport

_RETRY = re.compile(
    r"Request attempt #\S+ failed; "
    r"(?:will retry|(?P<closed>TCP|SSL) closed; will re-authenticate): "
    r"(?P<what>\S+ \S+)(?: -> (?P<error>\w+))?"
)
_NO_REPLY = frozenset(
    {
        "ClientConnectionError",
        "ClientConnectorError",
        "ClientConnectorCertificateError",
        "ClientConnectorSSLError",
        "ClientOSError",
        "ClientPayloadError",
        "ConnectionRefusedError",
        "ConnectionResetError",
        "ServerConnectionError",
        "ServerDisconnectedError",
        "ServerTimeoutError",
        "SocketTimeoutError",
        "TimeoutError",
    }
)
"""aiohttp's and Python's names for a request that got no HTTP reply."""
_DECIDED = "kopf_scheduler_passes"


class KopfRetryFilter(logging.Filter):
    """Drops kopf's retry lines of requests without a reply, telling ``outage`` instead."""

    def __init__(self, outage: OutageReport) -> None:
        super().__init__()
        self._outage = outage

    def filter(self, record: logging.LogRecord) -> bool:
        # Each handler asks again about the same record: decide (and count) only once.
        decided = getattr(record, _DECIDED, None)
        if decided is None:
            decided = self._decide(record)
            setattr(record, _DECIDED, decided)
        return bool(decided)

    def _decide(self, record: logging.LogRecord) -> bool:
        if record.name != "kopf" and not record.name.startswith("kopf."):
            return True
        match = _RETRY.match(record.getMessage())
        if match is None:
            return True
        error = match["error"]
        if match["closed"] or error in _NO_REPLY:
            what = match["what"]
            self._outage.no_reply(f"{what}: {error or match['closed'] + ' connection closed'}")
            return False
        record.levelno = logging.WARNING
        record.levelname = logging.getLevelName(logging.WARNING)
        return True


def fold_kopf_retries(outage: OutageReport) -> Callable[[], None]:
    """Put the filter on the root logger's handlers; the returned function takes it off again."""
    retry_filter = KopfRetryFilter(outage)
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(retry_filter)

    def remove() -> None:
        for handler in handlers:
            handler.removeFilter(retry_filter)

    return remove
