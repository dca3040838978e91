"""scheduler_perf's SchedulingThroughput, sampled live the way its collector samples it.

Once a second the collector counts the scheduled pods it watches (the op's namespaces and label
selector). Nothing is recorded until the count is above zero, and the first such sample only
sets the baseline: sampling and pod creation start independently, so that first interval is an
outlier. After that, an interval in which no pod was scheduled is not recorded as zero: the
collector waits for the next pod, then records the rate over the whole stretch once for every
second it spans, so that percentiles still weigh each second once. Rates use the measured time
between samples, not the nominal second. The collector stops when the op completes; a last,
partial second is not sampled (as upstream). The summary is the average and the nearest-rank
50th, 90th, 95th and 99th percentiles of the recorded rates, in pods/s; with no rate recorded
(a workload scheduled within its first second) the figures are absent, as upstream's are.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench import stats

SAMPLE_SECONDS = 1.0
PERCENTILES = (50, 90, 95, 99)


@dataclass
class ThroughputCollector:
    scheduled: Callable[[], int]
    """The number of collected pods seen scheduled so far."""
    clock: Callable[[], float]
    sleep: Callable[[float], Awaitable[object]] = asyncio.sleep
    interval: float = SAMPLE_SECONDS
    rates: list[float] = field(default_factory=list)

    async def run(self) -> None:
        """Sample until cancelled, on a fixed grid of ``interval`` from the start."""
        started = self.clock()
        baseline: tuple[int, float] | None = None
        waited = 0
        tick = 0
        while True:
            tick += 1
            await self.sleep(max(0.0, started + tick * self.interval - self.clock()))
            now, count = self.clock(), self.scheduled()
            if count == 0:
                continue
            if baseline is None:
                baseline = (count, now)
                continue
            last_count, last_time = baseline
            if count == last_count:
                waited += 1
                continue
            rate = (count - last_count) / max(now - last_time, 1e-9)
            self.rates.extend([rate] * (waited + 1))
            baseline, waited = (count, now), 0


def summary(rates: Sequence[float]) -> dict[str, Any]:
    """Average and Perc50/90/95/99 of the recorded rates (pods/s), and how many there were."""
    if not rates:
        return {"samples": 0}
    figures: dict[str, Any] = {"samples": len(rates), "Average": round(sum(rates) / len(rates), 2)}
    for p in PERCENTILES:
        figures[f"Perc{p}"] = round(stats.percentile(rates, p) or math.nan, 2)
    return figures
