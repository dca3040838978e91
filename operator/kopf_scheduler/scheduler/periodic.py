"""Periodic work beside the loop: move pods out of backoff, retry leftovers, expire assumptions.

It runs in tasks of its own, beside the scheduling loop and for as long as it runs: every second,
on whole seconds of the clock, pods whose backoff ended move to the active queue and the
pending-pods and cache-size gauges are sampled; every 30 seconds pods left unschedulable for too
long are retried; every second assumed pods whose binding the watch has not confirmed within
the TTL leave the cache. A failing round is logged and the next one runs as usual.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.cache.cache import Cache
from kopf_scheduler.ports import Clock, Metrics
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue

logger = structlog.get_logger("kopf_scheduler.scheduler")

BACKOFF_FLUSH_PERIOD = 1.0
UNSCHEDULABLE_FLUSH_PERIOD = 30.0
ASSUMED_CLEANUP_PERIOD = 1.0


def start_periodic_tasks(
    *, queue: SchedulingQueue, cache: Cache, clock: Clock, metrics: Metrics
) -> list[asyncio.Task[None]]:
    """Start the periodic work; the caller cancels the tasks when it stops."""

    def flush_backoff() -> None:
        queue.flush_backoff_completed()
        for queue_name, count in queue.pending_counts().items():
            metrics.set(m.PENDING_PODS, count, {"queue": queue_name})
        metrics.set(m.CACHE_SIZE, cache.node_count(), {"type": "nodes"})
        metrics.set(m.CACHE_SIZE, cache.pod_count(), {"type": "pods"})
        metrics.set(m.CACHE_SIZE, cache.assumed_count(), {"type": "assumed_pods"})

    def cleanup_assumed() -> None:
        for pod in cache.cleanup_expired_assumed_pods():
            logger.warning("assumed_pod_expired", pod=pod.key, node=pod.node_name)

    loop = asyncio.get_running_loop()
    return [
        loop.create_task(_every(clock, BACKOFF_FLUSH_PERIOD, flush_backoff, align=True)),
        loop.create_task(
            _every(clock, UNSCHEDULABLE_FLUSH_PERIOD, queue.flush_unschedulable_leftover)
        ),
        loop.create_task(_every(clock, ASSUMED_CLEANUP_PERIOD, cleanup_assumed)),
    ]


async def _every(
    clock: Clock, period: float, action: Callable[[], None], align: bool = False
) -> None:
    if align:
        now = clock.now()
        await clock.sleep(math.ceil(now) - now)
    while True:
        try:
            action()
        except Exception:
            logger.exception("periodic_task_failed")
        await clock.sleep(period)
