"""How late the event loop gets to what is ready: ``kopf_scheduler_event_loop_lag_seconds``.

Everything the scheduler does runs on one thread: watch events are decoded and handled, cycles
run, bindings and events are sent and their replies read. A reply that has arrived waits until
the loop is free and the process holds a CPU, and neither shows in the API server's own figures.
A timer that asks to wake every :data:`LAG_INTERVAL` and records how late it woke measures that
wait directly: work queued ahead of it on the loop, or the process waiting for a CPU its
neighbours hold. Read beside ``kopf_scheduler_binding_request_duration_seconds`` it tells how
much of a slow binding round trip was spent here rather than in the API server.
"""

from __future__ import annotations

import asyncio

from kopf_scheduler import metric_names as m
from kopf_scheduler.ports import Metrics

LAG_INTERVAL = 0.1
"""Seconds between the timer's wake-ups: ten samples a second, a negligible load."""


async def observe_loop_lag(metrics: Metrics, interval: float = LAG_INTERVAL) -> None:
    """Record, until cancelled, how late each of the timer's wake-ups came."""
    loop = asyncio.get_running_loop()
    while True:
        due = loop.time() + interval
        await asyncio.sleep(interval)
        # asyncio may run a timer up to its clock's resolution early: that is no lag.
        metrics.observe(m.EVENT_LOOP_LAG, max(0.0, loop.time() - due))
