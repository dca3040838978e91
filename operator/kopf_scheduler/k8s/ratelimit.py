"""Client-side rate limiting of API requests, as client-go's token bucket does it.

kube-scheduler talks to the API server through a client limited to ``clientConnection.qps``
requests per second with bursts of up to ``clientConnection.burst`` (50 and 100 by default). The
bucket starts full, refills at ``qps`` tokens per second, and every request takes one token. A
request that finds the bucket empty reserves the next token and waits for it, so waiters are served
in arrival order and never spin.

The two numbers mean what kube-scheduler's defaulting and client-go make of them: a ``qps`` of 0
and a ``burst`` of 0 mean "the scheduler's defaults" (50 and 100), and a negative ``qps`` turns the
limit off.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

from kopf_scheduler.k8s.real_clocks import MonotonicClock
from kopf_scheduler.ports import Clock

DEFAULT_QPS = 50.0
DEFAULT_BURST = 100


class RateLimiter(Protocol):
    async def acquire(self) -> None:
        """Wait until one more request may be sent."""


class Unlimited:
    """No limit at all (``qps < 0``)."""

    async def acquire(self) -> None:
        return None


class TokenBucket:
    """``qps`` tokens per second, at most ``burst`` saved up; starts full."""

    def __init__(self, qps: float, burst: int, clock: Clock | None = None) -> None:
        if qps <= 0:
            raise ValueError(f"qps must be positive, got {qps!r}")
        if burst < 1:
            raise ValueError(f"burst must be at least 1, got {burst!r}")
        self.qps = float(qps)
        self.burst = burst
        self._clock: Clock = clock if clock is not None else MonotonicClock()
        self._tokens = float(burst)
        self._updated = self._clock.now()

    def _refill(self, now: float) -> None:
        if now > self._updated:
            self._tokens = min(float(self.burst), self._tokens + (now - self._updated) * self.qps)
            self._updated = now

    @property
    def tokens(self) -> float:
        """Tokens available right now (negative while requests are waiting for reservations)."""
        self._refill(self._clock.now())
        return self._tokens

    def reserve(self) -> float:
        """Take one token, possibly from the future; the seconds to wait before using it."""
        self._refill(self._clock.now())
        self._tokens -= 1.0
        return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    async def acquire(self) -> None:
        delay = self.reserve()
        if delay <= 0:
            return
        try:
            await self._clock.sleep(delay)
        except asyncio.CancelledError:
            # The caller gave up: hand the reserved token back for the next request.
            self._refill(self._clock.now())
            self._tokens = min(float(self.burst), self._tokens + 1.0)
            raise


def limiter_for(qps: float, burst: int, clock: Clock | None = None) -> RateLimiter:
    """The limiter for ``clientConnection.qps``/``burst`` with kube-scheduler's defaulting."""
    if qps < 0:
        return Unlimited()
    return TokenBucket(
        qps if qps > 0 else DEFAULT_QPS,
        burst if burst > 0 else DEFAULT_BURST,
        clock,
    )
