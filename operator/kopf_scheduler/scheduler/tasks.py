"""The scheduler's background tasks: the API calls that run while the loop goes on.

Bindings, status patches and victim deletions run as asyncio tasks, as upstream runs them in
goroutines. Each is held here until it ends, so that none is collected mid-flight, a failure is
logged rather than lost, and shutdown and tests can wait for all of them.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

import structlog

logger = structlog.get_logger("kopf_scheduler.scheduler")


class BackgroundTasks:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[None]] = set()

    def start(self, coroutine: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        """Run ``coroutine`` in the background and return its task, for callers that wait."""
        task = asyncio.get_running_loop().create_task(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run ``coroutine`` in the background; failures are logged, never lost silently."""
        self.start(coroutine)

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background_task_failed", exc_info=task.exception())

    def cancel(self) -> None:
        """Cancel every task (a simulation that reached its time limit)."""
        for task in list(self._tasks):
            task.cancel()

    async def drain(self) -> None:
        """Wait until every task, including those started meanwhile, has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    def __len__(self) -> int:
        return len(self._tasks)
