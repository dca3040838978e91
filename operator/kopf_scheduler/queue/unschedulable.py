"""unschedulablePods: pods waiting for a cluster event that might make them schedulable.

Two kinds live here: pods that were tried and rejected (a matching event or the five-minute
flush moves them on), and pods a PreEnqueue plugin holds back ("gated", e.g. scheduling gates or
a running async preemption), which only an event their gating plugin registered can release.
The map is keyed by ``namespace/name`` and keeps insertion order, so moves are reproducible. The
gated flag is recorded when a pod is stored, which keeps the ``unschedulable`` / ``gated`` counts
of ``scheduler_pending_pods`` consistent even while a pod's gating state is being recomputed.
"""

from __future__ import annotations

from kopf_scheduler.framework.types import QueuedPodInfo


class UnschedulablePods:
    __slots__ = ("_gated", "_pods")

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._gated: set[str] = set()

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def add_or_update(self, info: QueuedPodInfo) -> bool:
        """Store the pod (replacing any entry with its key); returns whether it is new here."""
        key = info.pod.key
        is_new = key not in self._pods
        self._pods[key] = info
        if info.gated:
            self._gated.add(key)
        else:
            self._gated.discard(key)
        return is_new

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def delete(self, key: str) -> QueuedPodInfo | None:
        self._gated.discard(key)
        return self._pods.pop(key, None)

    def values(self) -> list[QueuedPodInfo]:
        """A snapshot of the stored pods, in the order they arrived."""
        return list(self._pods.values())

    @property
    def gated_count(self) -> int:
        return len(self._gated)

    @property
    def unschedulable_count(self) -> int:
        return len(self._pods) - len(self._gated)
