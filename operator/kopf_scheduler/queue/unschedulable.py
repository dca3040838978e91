"""unschedulablePods: pods waiting for a cluster event that might make them schedulable.

Two kinds live here: pods that were tried and rejected (a matching event or the five-minute
flush moves them on), and pods a PreEnqueue plugin holds back ("gated", e.g. scheduling gates or
a running async preemption), which only an event their gating plugin registered can release.
The map is keyed by ``namespace/name`` and keeps the order pods were last stored in, so moves
are reproducible. The gated flag and gating plugin are recorded when a pod is stored, which keeps
the ``unschedulable`` / ``gated`` counts of ``scheduler_pending_pods`` consistent even while a
pod's gating state is being recomputed.

Gated pods are also grouped by their gating plugin. Every bind is an event offered to the whole
map, and a cluster can hold ten thousand gated pods that no bind concerns; with the groups, an
event none of the gating plugins registered is offered to the rejected pods alone instead of
being turned down once per gated pod.
"""

from __future__ import annotations

from collections.abc import Callable

from kopf_scheduler.framework.types import QueuedPodInfo


class UnschedulablePods:
    __slots__ = ("_gated_per_plugin", "_gating_plugin_of", "_pods", "_rejected")

    def __init__(self) -> None:
        self._pods: dict[str, QueuedPodInfo] = {}
        self._rejected: dict[str, QueuedPodInfo] = {}
        """The pods stored while not gated."""
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

    def offered(self, releases: Callable[[str], bool]) -> list[QueuedPodInfo]:
        """The pods an event can move, in the order they were last stored: every pod not gated,
        and the gated pods whose gating plugin ``releases`` (called once per plugin) accepts."""
        released = {plugin for plugin in self._gated_per_plugin if releases(plugin)}
        if not released:
            return list(self._rejected.values())
        if len(released) == len(self._gated_per_plugin):
            return list(self._pods.values())
        gating_plugin_of = self._gating_plugin_of
        return [
            info
            for key, info in self._pods.items()
            if key not in gating_plugin_of or gating_plugin_of[key] in released
        ]

    def _forget_group(self, key: str) -> None:
        plugin = self._gating_plugin_of.pop(key, None)
        if plugin is None:
            del self._rejected[key]
            return
        remaining = self._gated_per_plugin[plugin] - 1
        if remaining:
            self._gated_per_plugin[plugin] = remaining
        else:
            del self._gated_per_plugin[plugin]

    @property
    def gated_count(self) -> int:
        return len(self._gating_plugin_of)

    @property
    def unschedulable_count(self) -> int:
        return len(self._rejected)
