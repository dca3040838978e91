"""The work queue the simulated controllers share, as kube-controller-manager's controllers each
have one.

A change the controller watches queues a work item (what to do, and to which object); an item
already waiting is not queued twice. :meth:`QueuedController.run` works the items off in arrival
order until none is left, so the writes a controller makes on the way, which queue their own
follow-ups, are handled by the same run; a run started from inside one does nothing.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import OrderedDict
from typing import Any

Raw = dict[str, Any]


class QueuedController(ABC):
    def __init__(self) -> None:
        self._queue: OrderedDict[tuple[str, str], Raw | None] = OrderedDict()
        """Work items ``(what, key)`` in arrival order, each with the object it needs kept (or
        ``None``); taken from the front in constant time (a plain dict slows down as its front
        fills with deleted slots)."""
        self._running = False

    def run(self) -> None:
        """Work until nothing is left."""
        if self._running:
            return
        self._running = True
        try:
            while self._queue:
                (what, key), raw = self._queue.popitem(last=False)
                self._work(what, key, raw)
        finally:
            self._running = False

    @abstractmethod
    def _work(self, what: str, key: str, raw: Raw | None) -> None:
        """Do one work item."""
