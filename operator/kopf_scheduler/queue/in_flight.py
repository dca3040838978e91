"""In-flight tracking: which pods are being scheduled, and what happened meanwhile.

A pod is in flight from the moment it is popped until ``done``. A cluster event that arrives in
that window cannot move the pod (it is in no sub-queue), so it is recorded here; when the
attempt fails, every event recorded after the pod was popped is replayed through the queueing
hints to decide where the pod goes. Without this, a node that frees up while a pod is being
tried would be missed and the pod would sleep in unschedulablePods until the five-minute flush.

Pods and events share one sequence counter, so "events after this pod" is a suffix of the event
list; events older than the oldest in-flight pod are dropped when that pod is done.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.framework.events import ClusterEvent
from kopf_scheduler.model.pod import Pod


@dataclass(frozen=True)
class RecordedEvent:
    """A cluster event seen while some pod was in flight, with the objects it carried."""

    event: ClusterEvent
    old: Any = None
    new: Any = None


class InFlight:
    __slots__ = ("_event_seqs", "_events", "_head", "_pods", "_seq")

    def __init__(self) -> None:
        self._seq = 0
        self._pods: dict[str, tuple[int, Pod]] = {}
        self._event_seqs: list[int] = []
        self._events: list[RecordedEvent] = []
        self._head = 0

    def __contains__(self, uid: object) -> bool:
        return uid in self._pods

    def __len__(self) -> int:
        return len(self._pods)

    def pods(self) -> list[Pod]:
        """The in-flight pods as they were when popped, oldest first."""
        return [pod for _, pod in self._pods.values()]

    def add_pod(self, pod: Pod) -> bool:
        """Start tracking ``pod``; ``False`` (nothing recorded) if its UID is already tracked."""
        if pod.uid in self._pods:
            return False
        self._seq += 1
        self._pods[pod.uid] = (self._seq, pod)
        return True

    def done(self, uid: str) -> bool:
        """Stop tracking the pod and forget events no remaining in-flight pod needs."""
        if self._pods.pop(uid, None) is None:
            return False
        if not self._pods:
            self._event_seqs.clear()
            self._events.clear()
            self._head = 0
            return True
        oldest = next(iter(self._pods.values()))[0]
        self._head = bisect_right(self._event_seqs, oldest, lo=self._head)
        if self._head > 64 and self._head * 2 > len(self._events):
            del self._event_seqs[: self._head]
            del self._events[: self._head]
            self._head = 0
        return True

    def add_event(self, event: ClusterEvent, old: Any, new: Any) -> bool:
        """Record an event if any pod is in flight; returns whether it was recorded."""
        if not self._pods:
            return False
        self._append(RecordedEvent(event, old, new))
        return True

    def add_events_if_pod_in_flight(
        self, old: Pod | None, new: Pod, events: Sequence[ClusterEvent]
    ) -> bool:
        """Record updates of ``new`` itself if it is in flight; returns whether it is."""
        if new.uid not in self._pods:
            return False
        for event in events:
            self._append(RecordedEvent(event, old, new))
        return True

    def events_for(self, uid: str) -> list[RecordedEvent] | None:
        """Events recorded since the pod was popped, oldest first; ``None`` if not in flight."""
        entry = self._pods.get(uid)
        if entry is None:
            return None
        start = bisect_right(self._event_seqs, entry[0], lo=self._head)
        return self._events[start:]

    def events(self) -> list[RecordedEvent]:
        """Every event still kept (for inspection)."""
        return self._events[self._head :]

    def _append(self, recorded: RecordedEvent) -> None:
        self._seq += 1
        self._event_seqs.append(self._seq)
        self._events.append(recorded)
