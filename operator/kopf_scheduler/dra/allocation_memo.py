"""Earlier answers of the allocator, kept across scheduling attempts.

Upstream runs the whole device search for every node a pod's Filter visits. The answer for one
node depends only on what the claims ask for (their specs and the DeviceClasses they name), on
the node's pools (the versions of the slices it sees) and on which of those devices are taken.
Pods made from one template ask the same thing, and placing one pod changes the taken devices of
one node only, so the next pod would search every other node again for the answer it already
had. The memo keeps that answer under exactly those inputs: the same search on the same inputs
would choose the same devices, so a kept answer is the one the search would give.

Only complete answers are kept (an allocation, or "does not fit"); a search that failed with an
error or ran past the filter timeout is not. Least recently used answers go first; thread-safe.
The allocations handed out are shared with the memo and must not be changed by the caller.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable
from typing import Any

import cachetools

MemoKey = tuple[Hashable, ...]
Answer = tuple[dict[str, Any], ...] | None
"""One ``status.allocation`` per claim, or ``None`` when the claims do not fit on the node."""


class AllocationMemo:
    def __init__(self, maxsize: int = 8192) -> None:
        self._answers: cachetools.LRUCache[MemoKey, tuple[Answer]] = cachetools.LRUCache(
            maxsize=maxsize
        )
        self._lock = threading.Lock()

    def get(self, key: MemoKey) -> tuple[Answer] | None:
        """The kept answer, wrapped in a 1-tuple (its value may be ``None``); ``None`` if none."""
        with self._lock:
            return self._answers.get(key)

    def put(self, key: MemoKey, answer: Answer) -> None:
        with self._lock:
            self._answers[key] = (answer,)

    def __len__(self) -> int:
        with self._lock:
            return len(self._answers)
