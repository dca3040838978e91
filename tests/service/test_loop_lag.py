"""The event-loop lag probe: a loop kept busy shows as a late wake-up."""

from __future__ import annotations

import asyncio
import contextlib
import time

from kopf_scheduler import metric_names as m
from kopf_scheduler.service.loop_lag import observe_loop_lag
from tests.queue.fakes import RecordingMetrics


async def test_a_blocked_loop_is_recorded_as_a_late_wake_up() -> None:
    metrics = RecordingMetrics()
    probe = asyncio.create_task(observe_loop_lag(metrics, interval=0.01))
    await asyncio.sleep(0.015)  # the probe's second wake-up is due in the middle of the block
    time.sleep(0.2)  # the loop's one thread held, as a long callback would
    await asyncio.sleep(0.03)
    probe.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await probe

    lags = metrics.observed(m.EVENT_LOOP_LAG)
    assert len(lags) >= 2
    assert max(lags) >= 0.15
