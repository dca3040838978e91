"""The event loop a simulation runs on: it tells the driver when nothing is left to run.

The simulator moves virtual time only when every task the scheduler started is waiting for time
to pass (a volume binding polling for the PV controller, a grace period running out). That moment
is the one where the event loop has no callback ready and would block in its selector, and only
the loop knows it. ``asyncio.SelectorEventLoop`` takes its selector as a constructor argument, and
the loop hands the selector a zero timeout whenever a callback is ready: the selector of this loop
therefore sees every moment the loop would wait, and instead of waiting it completes the futures
that :meth:`SimulationLoop.idle` handed out. The driver awaits such a future where it would
otherwise have to look into the loop's private queues.

Why a loop of our own rather than looptime (MIT, by kopf's author, maintained): looptime makes
``loop.time()`` virtual and, after a number of idle cycles, jumps it to the next loop timer. The
simulator's time is the :class:`~kopf_scheduler.sim.virtual_clock.VirtualClock` the scheduler's
ports are built on (its sleepers are futures, not loop timers), and the driver chooses where time
goes next itself (a backoff expiring on the next whole second, the 30 s flush tick, a deletion) and
lets the PV controller act between two moves. looptime has no "the loop is idle" hook, only its own
jump, and rounds time to a fixed resolution: taking it would mean rebuilding the clock and the
driver around its jumps and accepting different timestamps. It also reaches the same internals
itself (it swaps the class of a running loop and replaces its selector's ``select``), so the private
access would only move out of sight. This loop changes nothing but the selector it is built with,
so every simulation decides and reports exactly as before. Its ``time()`` stays real: HTTP
clients and servers sharing the process keep working timeouts.
"""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Coroutine, Mapping
from typing import Any, TypeVar

T = TypeVar("T")
FileObj = Any
"""A file descriptor or an object with ``fileno()``, as ``selectors`` takes."""


class _IdleSelector(selectors.BaseSelector):
    """The default selector, except that a wait completes the idle futures instead of blocking."""

    def __init__(self) -> None:
        self._inner = selectors.DefaultSelector()
        self._waiters: list[asyncio.Future[None]] = []

    def add_waiter(self, future: asyncio.Future[None]) -> None:
        self._waiters.append(future)

    def register(self, fileobj: FileObj, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.register(fileobj, events, data)

    def unregister(self, fileobj: FileObj) -> selectors.SelectorKey:
        return self._inner.unregister(fileobj)

    def modify(self, fileobj: FileObj, events: int, data: Any = None) -> selectors.SelectorKey:
        return self._inner.modify(fileobj, events, data)

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout == 0 or not self._waiters:
            return self._inner.select(timeout)
        # Nothing is ready: wake the waiters (their callbacks run in this very iteration of the
        # loop) and only poll for I/O, since there is work again.
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if not waiter.done():
                waiter.set_result(None)
        return self._inner.select(0)

    def close(self) -> None:
        self._waiters.clear()
        self._inner.close()

    def get_map(self) -> Mapping[FileObj, selectors.SelectorKey]:
        return self._inner.get_map()


class SimulationLoop(asyncio.SelectorEventLoop):
    """A selector event loop that can say when it has nothing left to run."""

    def __init__(self) -> None:
        self._idle_selector = _IdleSelector()
        super().__init__(selector=self._idle_selector)

    def idle(self) -> asyncio.Future[None]:
        """A future that completes the next time no callback is ready to run.

        Every task that can run runs first; what is still pending then waits for something
        outside the loop (in a simulation: virtual time, or a controller the driver runs).
        """
        future = self.create_future()
        self._idle_selector.add_waiter(future)
        return future


def running_simulation_loop() -> SimulationLoop:
    """The running loop, which must be a :class:`SimulationLoop`; a clear error otherwise."""
    loop = asyncio.get_running_loop()
    if not isinstance(loop, SimulationLoop):
        raise RuntimeError(
            f"a simulation runs on kopf_scheduler.sim.loop.SimulationLoop, not on "
            f"{type(loop).__name__}: start it with kopf_scheduler.sim.loop.run() or "
            f"asyncio.Runner(loop_factory=SimulationLoop)"
        )
    return loop


def run(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` on a fresh :class:`SimulationLoop`."""
    with asyncio.Runner(loop_factory=SimulationLoop) as runner:
        return runner.run(main)
