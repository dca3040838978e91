"""activeQ: the pods ready to be tried, ordered by the profile's QueueSort ``less`` function.

With the default PrioritySort that is higher priority first, then earlier (re)insertion time.
Whatever the plugin says, equal pods come out in arrival order (``QueuedPodInfo.sequence``), so
runs on a fake clock, where many pods share one timestamp, are reproducible.
"""

from __future__ import annotations

from collections.abc import Callable

from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.queue.heap import KeyedHeap

LessFunc = Callable[[QueuedPodInfo, QueuedPodInfo], bool]


def stable_less(less: LessFunc) -> LessFunc:
    """``less``, with ties (neither is less than the other) broken by arrival sequence."""

    def ordered(a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        if less(a, b):
            return True
        if less(b, a):
            return False
        return a.sequence < b.sequence

    return ordered


def _key(info: QueuedPodInfo) -> str:
    return info.pod.key


class ActiveQueue:
    """The heap the scheduling loop pops from; keyed by ``namespace/name``."""

    __slots__ = ("_heap", "less")

    def __init__(self, less: LessFunc) -> None:
        self.less: LessFunc = stable_less(less)
        self._heap: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, self.less)

    def __len__(self) -> int:
        return len(self._heap)

    def __contains__(self, key: object) -> bool:
        return key in self._heap

    def add_or_update(self, info: QueuedPodInfo) -> None:
        self._heap.add_or_update(info)

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._heap.get(key)

    def peek(self) -> QueuedPodInfo | None:
        return self._heap.peek()

    def pop(self) -> QueuedPodInfo | None:
        return self._heap.pop()

    def delete(self, key: str) -> QueuedPodInfo | None:
        return self._heap.delete(key)

    def update_pod(self, pod: Pod) -> QueuedPodInfo | None:
        """Replace the stored pod object in place; ``None`` if the pod is not here."""
        info = self._heap.get(pod.key)
        if info is None:
            return None
        info.pod = pod
        self._heap.add_or_update(info)
        return info

    def items(self) -> list[QueuedPodInfo]:
        return self._heap.items()
