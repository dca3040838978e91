"""Retrying API requests that failed for reasons that may pass: overload, server errors, network.

A request is retried on 429 Too Many Requests (after the server's ``Retry-After`` when it sends
one), on any 5xx, and when no whole reply arrived (none at all, or one cut off mid-body); every
other 4xx is final, because sending the
same request again gets the same answer. Waits grow exponentially (0.2 s, 0.4 s, ... capped at 5 s)
over a bounded number of attempts, so a request gives up after a few seconds instead of stalling a
binding cycle.

Retrying writes is safe for the requests this package sends: a Binding that did land before the
connection dropped comes back as 409 "already assigned to node X" for the same node, which the
binder counts as success; status patches are idempotent; deletions carry a UID precondition and
treat 404 as done; a retried Event create at worst meets its own name (409, dropped); a Lease
update carries the ``resourceVersion`` it read, so a replay is rejected rather than applied twice.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Protocol, TypeVar

import structlog

from kopf_scheduler.k8s.errors import TransportError
from kopf_scheduler.k8s.real_clocks import MonotonicClock
from kopf_scheduler.ports import Clock

logger = structlog.get_logger("kopf_scheduler.k8s.retry")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    """Requests sent in total, the first one included; 1 disables retries."""
    initial_delay: float = 0.2
    factor: float = 2.0
    max_delay: float = 5.0
    max_retry_after: float = 30.0
    """The longest ``Retry-After`` honoured; longer asks are cut to this."""

    def backoff(self, retry: int) -> float:
        """The wait before retry number ``retry`` (1 for the first retry)."""
        return min(self.max_delay, self.initial_delay * self.factor ** max(0, retry - 1))

    def delay(self, retry: int, status: int, retry_after: float | None) -> float:
        """The wait before retrying a reply with ``status``.

        A 429 waits exactly as long as its ``Retry-After`` says (bounded); a 5xx waits for the
        longer of the backoff and its ``Retry-After``; without the header, the backoff.
        """
        backoff = self.backoff(retry)
        if retry_after is None:
            return backoff
        asked = min(retry_after, self.max_retry_after)
        return asked if status == 429 else max(backoff, asked)


DEFAULT_RETRY = RetryPolicy()
NO_RETRY = RetryPolicy(attempts=1)


class Reply(Protocol):
    """What the retry loop needs to know about a reply."""

    @property
    def status(self) -> int: ...

    @property
    def retry_after(self) -> float | None: ...


R = TypeVar("R", bound=Reply)


def is_retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """``Retry-After`` in seconds; the HTTP-date form is not used by the API server and ignored."""
    value = headers.get("Retry-After")
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


async def send_with_retries(
    send: Callable[[], Awaitable[R]],
    policy: RetryPolicy = DEFAULT_RETRY,
    clock: Clock | None = None,
    label: str = "request",
) -> R:
    """Call ``send`` until it returns a final reply or the attempts run out.

    ``send`` returns the reply for any HTTP status and raises :class:`TransportError` when no reply
    arrived. The last reply is returned even when it is retryable (the caller turns it into an
    error); a transport failure on the last attempt propagates.
    """
    sleeper: Clock = clock if clock is not None else MonotonicClock()
    attempts = max(1, policy.attempts)
    for attempt in range(1, attempts + 1):
        try:
            reply = await send()
        except TransportError as error:
            if attempt == attempts:
                raise
            delay = policy.backoff(attempt)
            # No reply at all: the client's outage report tells of it once per outage.
            logger.debug(
                "request_retrying",
                request=label,
                delay_seconds=round(delay, 2),
                reason=error.message,
            )
        else:
            if attempt == attempts or not is_retryable_status(reply.status):
                return reply
            delay = policy.delay(attempt, reply.status, reply.retry_after)
            logger.info(
                "request_retrying",
                request=label,
                delay_seconds=round(delay, 2),
                status=reply.status,
            )
        await sleeper.sleep(delay)
    raise AssertionError("unreachable: the loop returns or raises on its last attempt")
