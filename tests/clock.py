"""The one clock tests drive: time moves only when a test moves it or the code sleeps.

It fits every place the product takes time from: called bare (``clock()``, the caches and
queues), as a :class:`~kopf_scheduler.ports.Clock` (``now`` and ``sleep``), and as the ``time``
module of code that blocks (:meth:`FakeClock.as_time_module`). A sleep returns at once, after
moving time forward by what was asked and running the actions due by then (:meth:`at`), so a
test can play another party (a controller, the API server) between two polls of the code under
test.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from types import SimpleNamespace


class FakeClock:
    def __init__(self, start: float = 0.0) -> None:
        self.start = start
        self.t = start
        self.sleeps: list[float] = []
        """Every sleep asked for, in order."""
        self._actions: list[tuple[float, Callable[[], None]]] = []

    def __call__(self) -> float:
        return self.t

    def now(self) -> float:
        return self.t

    @property
    def elapsed(self) -> float:
        return self.t - self.start

    def at(self, elapsed: float, action: Callable[[], None]) -> None:
        """Run ``action`` once ``elapsed`` seconds have passed since the start."""
        self._actions.append((self.start + elapsed, action))

    def advance(self, seconds: float) -> None:
        """Move time forward (never back) and run the actions now due, in the order given."""
        self.t += max(0.0, seconds)
        due = [entry for entry in self._actions if entry[0] <= self.t]
        self._actions = [entry for entry in self._actions if entry[0] > self.t]
        for _, action in due:
            action()

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.advance(seconds)
        await asyncio.sleep(0)

    def as_time_module(self) -> SimpleNamespace:
        """Stands in for the ``time`` module of blocking code: wall and monotonic time are both
        this clock, and ``sleep`` advances it."""

        def blocking_sleep(seconds: float) -> None:
            self.sleeps.append(seconds)
            self.advance(seconds)

        return SimpleNamespace(time=self.now, monotonic=self.now, sleep=blocking_sleep)
