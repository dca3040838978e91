"""unschedulablePods: pods waiting for a cluster event that might make them schedulable.

Two kinds live here: pods that were tried and rejected (a matching event or the five-minute
flush moves them on), and pods a PreEnqueue plugin holds back ("gated", e.g. scheduling gates or
a running async preemption), which only an event their gating plugin registered can release.
The map is keyed by ``namespace/name`` and keeps the order pods were last stored in, so moves
are reproducible. The gated flag and gating plugin are recorded when a pod is stored, which keeps
the ``unschedulable`` / ``gated`` counts of ``scheduler_pending_pods`` consistent even while a
pod's gating state is being recomputed.

Gated pods are also grouped by their gating plugin, and rejected pods by their profile and the
plugins that rejected them. Every bind is an event offered to the whole map, and a cluster can
hold ten thousand gated pods that no bind concerns, or hundreds of pods too large for any node,
which only a deletion can help; with the groups, an event is offered only to the pods of the
groups it can move, decided once per group instead of once per pod.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.queue.hints import RejectorGroup, rejector_group

_Group = TypeVar("_Group", str, RejectorGroup)


class UnschedulablePods:
    __slots__ = (
        "_gated_per_plugin",
        "_gating_plugin_of",
        "_group_of",
        "_pods",
        "_rejected",
        "_rejected_per_group",
    )

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._rejected: dict[str, QueuedPodInfo] = {}
        """The pods stored while not gated."""
        self._group_of: dict[str, RejectorGroup] = {}
        """The rejected pods' keys, with the group each was stored in."""
        self._rejected_per_group: dict[RejectorGroup, int] = {}
        """How many rejected pods each group holds (none: the group is not a key)."""
        self._gating_plugin_of: dict[str, str] = {}
        """The gated pods' keys, with the plugin that gates each."""
        self._gated_per_plugin: dict[str, int] = {}
        """How many stored pods each gating plugin holds back (none: the plugin is not a key)."""

    def __len__(self) -> int:
        return len(self._pods)

    def __contains__(self, key: object) -> bool:
        return key in self._pods

    def add_or_update(self, info: QueuedPodInfo) -> bool:
        """Store the pod (replacing any entry with its key); returns whether it is new here."""
        key = info.pod.key
        is_new = self.delete(key) is None
        self._pods[key] = info
        if info.gated:
            plugin = info.gating_plugin
            self._gating_plugin_of[key] = plugin
            self._gated_per_plugin[plugin] = self._gated_per_plugin.get(plugin, 0) + 1
        else:
            self._rejected[key] = info
            group = self._group_of[key] = rejector_group(info)
            self._rejected_per_group[group] = self._rejected_per_group.get(group, 0) + 1
        return is_new

    def get(self, key: str) -> QueuedPodInfo | None:
        return self._pods.get(key)

    def delete(self, key: str) -> QueuedPodInfo | None:
        info = self._pods.pop(key, None)
        if info is not None:
            self._forget_group(key)
        return info

    def values(self) -> list[QueuedPodInfo]:
        """A snapshot of the stored pods, in the order they were last stored."""
        return list(self._pods.values())

    def offered(
        self, releases: Callable[[str], bool], moves: Callable[[RejectorGroup], bool]
    ) -> list[QueuedPodInfo]:
        """The pods an event can move, in the order they were last stored: the rejected pods
        whose group ``moves`` accepts and the gated pods whose gating plugin ``releases`` accepts
        (each called once per group or plugin)."""
        released = {plugin for plugin in self._gated_per_plugin if releases(plugin)}
        kept = {group for group in self._rejected_per_group if moves(group)}
        every_rejected = len(kept) == len(self._rejected_per_group)
        if not released:
            if every_rejected:
                return list(self._rejected.values())
            if not kept:
                return []
            group_of = self._group_of
            return [info for key, info in self._rejected.items() if group_of[key] in kept]
        if every_rejected and len(released) == len(self._gated_per_plugin):
            return list(self._pods.values())
        gating_plugin_of = self._gating_plugin_of
        group_of = self._group_of
        return [
            info
            for key, info in self._pods.items()
            if (
                gating_plugin_of[key] in released
                if key in gating_plugin_of
                else group_of[key] in kept
            )
        ]

    def _forget_group(self, key: str) -> None:
        plugin = self._gating_plugin_of.pop(key, None)
        if plugin is None:
            del self._rejected[key]
            _count_one_less(self._rejected_per_group, self._group_of.pop(key))
            return
        _count_one_less(self._gated_per_plugin, plugin)

    @property
    def gated_count(self) -> int:
        return len(self._gating_plugin_of)

    @property
    def unschedulable_count(self) -> int:
        return len(self._rejected)


def _count_one_less(counts: dict[_Group, int], group: _Group) -> None:
    """One pod fewer in ``group``; a group left empty is no longer a key."""
    left = counts[group] - 1
    if left:
        counts[group] = left
    else:
        del counts[group]
