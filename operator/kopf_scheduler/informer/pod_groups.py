"""The PodGroups the scheduler watches, and which known pods name each of them.

Coscheduling asks, for every attempt of a gang member, how many pods its group has; going
through every pod each time would cost in proportion to the cluster, so the pods are indexed by
the group their label names as the pod events arrive. A pod counts while the store holds it
(pending, assumed or bound, not terminal), whether or not its PodGroup exists yet.
"""

from __future__ import annotations

from collections.abc import Collection

from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import PodGroup, pod_group_key


class PodGroupStore:
    """Implements :class:`~kopf_scheduler.framework.handle.PodGroupLister`."""

    def __init__(self) -> None:
        self.groups: dict[str, PodGroup] = {}
        self._members: dict[str, dict[str, Pod]] = {}

    def get(self, key: str) -> PodGroup | None:
        return self.groups.get(key)

    def members(self, key: str) -> Collection[Pod]:
        found = self._members.get(key)
        return found.values() if found is not None else ()

    def pod_changed(self, old: Pod | None, new: Pod | None) -> None:
        """Keep the index current when the store's pod ``old`` becomes ``new`` (either may be
        ``None``: added, deleted)."""
        if old is not None:
            key = pod_group_key(old.namespace, old.labels)
            if key is not None:
                members = self._members.get(key)
                if members is not None:
                    members.pop(old.key, None)
                    if not members:
                        del self._members[key]
        if new is not None:
            key = pod_group_key(new.namespace, new.labels)
            if key is not None:
                self._members.setdefault(key, {})[new.key] = new
