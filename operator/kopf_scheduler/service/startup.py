"""Starting against an API server that is not there yet: retry with back-off, say why, stay unready.

kube-scheduler's informers retry a failed LIST forever with back-off, whatever the failure
(connection refused, a server that does not answer, a certificate from another CA, 401, 403),
and the process stays unready meanwhile, so an admin who fixes the RBAC or the network does not
have to restart it. ``run`` does the same: the health port is bound first (a taken port is an
error at once, not after the caches synced), ``/readyz`` answers 503 until the initial lists are
in, and each failed attempt is one warning that names the problem and the wait before the next.
A quick ``GET /version`` with a short timeout comes first, so that a server that swallows
packets is reported within seconds instead of after a request timeout.

kopf's own requests get the same never-ending back-off (:class:`EndlessBackoffs`): by default
kopf gives a request up after about a minute, and the resource discovery it runs once at start
then ends the operator, so an API server that went away right after the caches synced would
stop the process.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Iterable, Iterator

import structlog

from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.retry import NO_RETRY
from kopf_scheduler.ports import ApiError

logger = structlog.get_logger("kopf_scheduler.service")

INITIAL_DELAY = 1.0
MAX_DELAY = 30.0
"""client-go's reflectors back off up to 30 s between failed lists."""
PROBE_TIMEOUT = 10.0


class StartupError(Exception):
    """The process cannot start (a one-line reason); ``run`` exits with 1."""


def backoff_delays() -> Iterator[float]:
    """1 s, 2 s, 4 s ... then 30 s for ever."""
    delay = INITIAL_DELAY
    while True:
        yield delay
        delay = min(delay * 2, MAX_DELAY)


class EndlessBackoffs:
    """kopf's ``settings.networking.error_backoffs`` with no last attempt.

    kopf iterates the setting afresh for every request, so this is an iterable, not an iterator.
    """

    def __iter__(self) -> Iterator[float]:
        return backoff_delays()


def describe(error: ApiError) -> str:
    """What went wrong, in a phrase an admin can act on."""
    if error.status == 0:
        return f"cannot connect to the API server: {error.message}"
    if error.status == 401:
        return f"the API server rejected the credentials (401 Unauthorized): {error.message}"
    if error.status == 403:
        return f"a permission is missing (403 Forbidden): {error.message}"
    return str(error)


async def list_until_synced(
    api: Api,
    list_all: Callable[[], Awaitable[None]],
    stop: asyncio.Event,
    *,
    delays: Iterable[float] | None = None,
    probe_timeout: float = PROBE_TIMEOUT,
) -> bool:
    """Run ``list_all`` until it succeeds; ``False`` when ``stop`` is set (or ``delays`` end) first.

    Every failure logs one ``api_unavailable`` warning with the reason and the wait (``delays``,
    by default :func:`backoff_delays`); the first success after a failure logs ``api_available``.
    """
    server = str(api.client.configuration.host)
    failures = 0
    for delay in delays if delays is not None else backoff_delays():
        try:
            await asyncio.wait_for(api.request("GET", "/version", retry=NO_RETRY), probe_timeout)
            await list_all()
        except (ApiError, TimeoutError) as error:
            failures += 1
            reason = (
                describe(error)
                if isinstance(error, ApiError)
                else f"no reply from the API server within {probe_timeout:g}s"
            )
            logger.warning(
                "api_unavailable", server=server, reason=reason, attempt=failures, retry_in=delay
            )
        else:
            if failures:
                logger.info("api_available", server=server, failed_attempts=failures)
            return True
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), delay)
        if stop.is_set():
            return False
    return False
