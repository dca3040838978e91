"""What winning and losing the Lease does to this replica.

Only the leader pops and binds; a follower keeps its caches warm, so that it takes over at once
when the Lease comes to it. The ``leader_election_master_status`` gauge says, as
kube-scheduler's does, whether this replica leads: 0 from the start, until the Lease is won.
"""

from __future__ import annotations

import asyncio

import structlog

from kopf_scheduler import metric_names as m
from kopf_scheduler.ports import Metrics
from kopf_scheduler.scheduler.loop import Scheduler

logger = structlog.get_logger("kopf_scheduler.service")


class Leadership:
    """The callbacks of the Lease campaign for ``lease_name``; ``stopping`` is the process's
    stop flag, which tells a Lease released on shutdown from one lost while running."""

    def __init__(
        self, scheduler: Scheduler, metrics: Metrics, lease_name: str, stopping: asyncio.Event
    ) -> None:
        self._scheduler = scheduler
        self._metrics = metrics
        self._lease_name = lease_name
        self._stopping = stopping
        self._set_status(0)

    def _set_status(self, value: int) -> None:
        self._metrics.set(m.LEADER_ELECTION_MASTER_STATUS, value, {"name": self._lease_name})

    def started_leading(self) -> None:
        logger.info("leader_elected", lease=self._lease_name)
        self._set_status(1)
        self._scheduler.active = True
        self._scheduler.notify()

    def stopped_leading(self) -> None:
        if self._stopping.is_set():
            logger.info("leadership_released", lease=self._lease_name)
        else:
            logger.warning("leadership_lost", lease=self._lease_name)
        self._set_status(0)
        self._scheduler.active = False
