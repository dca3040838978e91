"""What Coscheduling knows about pod groups across attempts: where their members stand and which
groups are backing off.

Members count as *placed* when the scheduler's snapshot has them on a node: bound, or assumed
(waiting at Permit or binding). As upstream, that is found by going through the snapshot's pods,
which costs time in proportion to the cluster but only for pods of a group.

A group fails when one of its members cannot be placed while the group is short of
``minMember``; with ``podGroupBackoffSeconds`` set, its pods are then turned away at PreFilter
for that long, so that the cluster's room goes to other pods rather than to a gang that just
failed. A back-off is never extended by the group's own retries during it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import POD_GROUP_LABEL, PodGroup, pod_group_key


def group_of(pod: Pod) -> str | None:
    """``namespace/name`` of the pod's group, ``None`` for a pod of no group."""
    return pod_group_key(pod.namespace, pod.labels)


def is_member(pod: Pod, group_key: str) -> bool:
    return group_of(pod) == group_key


@dataclasses.dataclass(eq=False, repr=False)
class GroupManager:
    lister: api.PodGroupLister
    nodes: Callable[[], list[api.NodeInfo]]
    now: Callable[[], float]
    backoff_seconds: float
    _backoff_until: dict[str, float] = dataclasses.field(default_factory=dict, init=False)

    def get(self, group_key: str) -> PodGroup | None:
        return self.lister.get(group_key)

    def member_count(self, group_key: str) -> int:
        """The group's pods the scheduler knows: pending, assumed and bound."""
        return len(self.lister.members(group_key))

    def pending_members(self, group_key: str, but: Pod) -> list[Pod]:
        """The group's pods not on a node yet, other than ``but``."""
        return [
            member
            for member in self.lister.members(group_key)
            if not member.node_name and member.uid != but.uid
        ]

    def placed_count(self, group_key: str, but: Pod | None = None) -> int:
        """Members on a node in the snapshot (bound or assumed), other than ``but``."""
        uid = but.uid if but is not None else None
        return sum(1 for _, member in self._placed(group_key) if member.uid != uid)

    def _placed(self, group_key: str) -> Iterator[tuple[api.NodeInfo, Pod]]:
        namespace, _, name = group_key.partition("/")
        for info in self.nodes():
            for pod in info.pods:
                if pod.namespace == namespace and pod.labels.get(POD_GROUP_LABEL) == name:
                    yield info, pod

    # Back-off ---------------------------------------------------------------------------------

    def in_backoff(self, group_key: str) -> bool:
        until = self._backoff_until.get(group_key)
        if until is None:
            return False
        if self.now() < until:
            return True
        del self._backoff_until[group_key]
        return False

    def back_off(self, group_key: str) -> None:
        """Start the group's back-off, if configured and not running already."""
        if self.backoff_seconds > 0 and not self.in_backoff(group_key):
            self._backoff_until[group_key] = self.now() + self.backoff_seconds
