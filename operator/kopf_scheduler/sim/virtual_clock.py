"""A virtual clock: ``sleep`` parks the caller until the simulation advances time past it."""

from __future__ import annotations

import asyncio
import heapq
import itertools

SIMULATION_EPOCH = 1_767_225_600.0
"""2026-01-01T00:00:00Z: where virtual time starts, so timestamps read naturally."""


class VirtualClock:
    def __init__(self, start: float = SIMULATION_EPOCH) -> None:
        self._now = start
        self._sleepers: list[tuple[float, int, asyncio.Future[None]]] = []
        self._sequence = itertools.count()

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._sleepers, (self._now + seconds, next(self._sequence), future))
        await future

    def next_deadline(self) -> float | None:
        while self._sleepers and self._sleepers[0][2].done():
            heapq.heappop(self._sleepers)
        return self._sleepers[0][0] if self._sleepers else None

    def advance_to(self, when: float) -> None:
        """Move time forward (never back) and wake every sleeper that is due."""
        self._now = max(self._now, when)
        while self._sleepers and self._sleepers[0][0] <= self._now:
            _, _, future = heapq.heappop(self._sleepers)
            if not future.done():
                future.set_result(None)
