"""Real clocks for the operator: wall time for timestamps written to the API, monotonic time for
rate limits.

Both satisfy :class:`kopf_scheduler.ports.Clock`, so every timer in this package can take a fake
clock in tests instead of sleeping for real.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime


class WallClock:
    """Seconds since the epoch; what Lease and Event timestamps are made of."""

    def now(self) -> float:
        return time.time()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


class MonotonicClock:
    """Seconds that never go backwards; what token buckets and backoffs measure."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))


def micro_time(seconds: float) -> str:
    """RFC 3339 with microseconds in UTC, the wire form of ``metav1.MicroTime``."""
    return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
