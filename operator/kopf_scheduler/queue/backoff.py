"""backoffQ: pods that may be retried, but not before their backoff expires.

A failed pod waits ``initial × 2^(n−1)`` seconds (capped at ``maximum``; 1 s and 10 s by default)
counted from its last failure, where ``n`` is how many times in a row its attempts failed with an
error if the last one did, else how many times plugins rejected it (kube-scheduler ≥ 1.34; before
that ``n`` was the number of pops, which is the same number while only plugins reject the pod).

As with kube-scheduler's SchedulerPopFromBackoffQ, the expiry is cut down to a whole second (the
one-second "ordering window") and the pod counts as backing off while that window is not older
than the current one: a pod that failed at 10.3 s with a 1 s backoff expires at 11.3 s, which
falls in window 11, so the flush that runs at 12.0 s releases it.

Two heaps, as upstream: pods rejected by plugins (ordered by window, then like activeQ, because
the loop may pop them early when activeQ is empty) and pods that failed with an error and no
rejecting plugin (ordered by expiry only, and never popped early).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.queue.heap import KeyedHeap

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0

NO_BACKOFF = -math.inf
"""The expiry of a pod that never failed: it is never backing off."""


def backoff_duration(failures: int, initial: float, maximum: float) -> float:
    """Seconds to wait after the ``failures``-th failed attempt: 0, then doubling up to the cap."""
    if failures <= 0:
        return 0.0
    duration = initial
    for _ in range(failures - 1):
        if duration >= maximum:
            break
        duration *= 2
    return min(duration, maximum)


def failure_count(info: QueuedPodInfo) -> int:
    """What backoff grows with: consecutive errors if the last attempt errored, else rejections."""
    if info.consecutive_errors_count > 0:
        return info.consecutive_errors_count
    return info.unschedulable_count


def align_to_window(t: float) -> float:
    """The start of the one-second window ``t`` falls in (sub-nanosecond noise ignored)."""
    return float(math.floor(round(t, 9)))


def _key(info: QueuedPodInfo) -> str:
    return info.pod.key


class BackoffQueue:
    """The two backoff heaps behind one interface, as the scheduling queue sees them."""

    __slots__ = ("_errors", "_now", "_rejected", "active_less", "initial", "maximum")

    def __init__(
        self,
        now: Callable[[], float],
        active_less: Callable[[QueuedPodInfo, QueuedPodInfo], bool],
        initial: float = DEFAULT_POD_INITIAL_BACKOFF,
        maximum: float = DEFAULT_POD_MAX_BACKOFF,
    ) -> None:
        if initial <= 0 or maximum <= 0:
            raise ValueError("backoff durations must be positive")
        self._now = now
        self.active_less = active_less
        self.initial = initial
        self.maximum = maximum
        self._rejected: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, self._less_with_priority)
        self._errors: KeyedHeap[QueuedPodInfo] = KeyedHeap(_key, self._less_by_expiry)

    # Expiry ------------------------------------------------------------------------------------

    def duration(self, info: QueuedPodInfo) -> float:
        return backoff_duration(failure_count(info), self.initial, self.maximum)

    def backoff_time(self, info: QueuedPodInfo) -> float:
        """The window-aligned end of the pod's backoff; cached on the pod until it fails again."""
        if failure_count(info) == 0:
            return NO_BACKOFF
        if info.backoff_expiration is None:
            info.backoff_expiration = align_to_window(info.timestamp + self.duration(info))
        return info.backoff_expiration

    def is_backing_off(self, info: QueuedPodInfo) -> bool:
        """Whether the pod's backoff window is the current one or later."""
        return self.backoff_time(info) >= align_to_window(self._now())

    def _less_with_priority(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ta = self.backoff_time(a)
        tb = self.backoff_time(b)
        if ta != tb:
            return ta < tb
        return self.active_less(a, b)

    def _less_by_expiry(self, a: QueuedPodInfo, b: QueuedPodInfo) -> bool:
        ta = self.backoff_time(a)
        tb = self.backoff_time(b)
        if ta != tb:
            return ta < tb
        return a.sequence < b.sequence

    # Membership --------------------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._rejected) + len(self._errors)

    def __contains__(self, key: object) -> bool:
        return key in self._rejected or key in self._errors

    def len_rejected(self) -> int:
        """How many pods the loop could pop early (those rejected by plugins)."""
        return len(self._rejected)

    def add(self, info: QueuedPodInfo) -> None:
        """Put the pod in the heap its last failure calls for (and out of the other one)."""
        if not info.unschedulable_plugins and not info.pending_plugins:
            self._rejected.delete(info.pod.key)
            self._errors.add_or_update(info)
        else:
            self._errors.delete(info.pod.key)
            self._rejected.add_or_update(info)

    def get(self, key: str) -> QueuedPodInfo | None:
        info = self._rejected.get(key)
        return info if info is not None else self._errors.get(key)

    def delete(self, key: str) -> QueuedPodInfo | None:
        info = self._rejected.delete(key)
        return info if info is not None else self._errors.delete(key)

    def update_pod(self, pod: Pod) -> QueuedPodInfo | None:
        """Replace the stored pod object in place; ``None`` if the pod is not here."""
        for heap in (self._rejected, self._errors):
            info = heap.get(pod.key)
            if info is not None:
                info.pod = pod
                heap.add_or_update(info)
                return info
        return None

    def pop_rejected(self) -> QueuedPodInfo | None:
        """Pop the head of the rejected-by-plugin heap, backoff done or not."""
        return self._rejected.pop()

    def pop_all_completed(self) -> list[QueuedPodInfo]:
        """Remove and return every pod whose backoff has completed, rejected heap first."""
        completed: list[QueuedPodInfo] = []
        for heap in (self._rejected, self._errors):
            while True:
                head = heap.peek()
                if head is None or self.is_backing_off(head):
                    break
                heap.pop()
                completed.append(head)
        return completed

    def items(self) -> list[QueuedPodInfo]:
        return self._rejected.items() + self._errors.items()
