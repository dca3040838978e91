"""Pacing requests the way upstream's executor paces them: with a ticker.

scheduler_perf's ``deletePods`` (``deletePodsPerSecond``) and ``churn`` (``intervalMilliseconds``)
wait on a Go ``time.Ticker`` before each request and make the request in the same goroutine. A Go
ticker fires on a fixed grid and keeps at most one tick for a receiver that is busy; the ticks
that fall while one is kept are dropped. So a request that takes longer than the period delays
the next one only by what it overruns, never by the period on top of its own length: at 100 a
second and 30 ms a request, upstream deletes about 33 pods a second, where sleeping the period
before each request would delete 25. How fast a workload's blockers go matters to the schedulers
measured, since their waiting pods can be placed only once the blockers are gone.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


class Ticker:
    """Ticks every ``period`` seconds from its creation; :meth:`tick` waits for the next one."""

    def __init__(
        self,
        period: float,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._period = period
        self._clock = clock
        self._sleep = sleep
        self._start = clock()
        self._received = 0
        """The grid index of the last tick handed out."""

    async def tick(self) -> None:
        now = self._clock()
        due = self._start + (self._received + 1) * self._period
        if now < due:
            await self._sleep(due - now)
            self._received += 1
            return
        # A tick fell while the caller was busy and was kept for it; any after that one were
        # dropped, so the next comes at the first grid time after now.
        self._received = int((now - self._start) / self._period)
