"""What the cluster looked like when a PodGroup last failed, so that the group tries again only
after something changed that can let it fit.

Why
    A group fails as a whole in PostFilter: a member found no node while the group was short of
    ``minMember``, and the members waiting at Permit were rejected. Room given back afterwards
    wakes pods up (the assigned-pod deletions of the waiting members, forgotten), and any pod
    whose attempt failed on resources retries on it. Two groups that cannot fit would then
    wake each other for as long as they exist: each one's failed attempt gives back room that
    was free when the other one failed, and is no news to it. The back-off of
    ``podGroupBackoffSeconds`` only spaces these retries out (and is off by default).

The rule
    Only a failure that gave room back counts (members were waiting at Permit and were
    rejected), and only when no other member could complete the group instead: the group has
    no more members left to place than it needs. At such a failure, the plugin remembers which
    pods other than the group's own were on the nodes (bound, or assumed: room other gangs held
    while waiting at Permit), each node's allocatable, labels, taints and ``unschedulable``,
    how many members the group had and the PodGroup's resourceVersion. Until one of these
    changes (one of those pods gone, a node added, resized, relabelled, tainted or untainted, a
    member added, the PodGroup changed), PreFilter turns the group's members away,
    unresolvable; the plugin registers those node changes, and the assigned-pod deletion hint
    wakes the members only for the deletion of a pod remembered. Pods
    placed after the failure and gone again are no news: their room was free at the failure.

Cost
    A remembered failure holds the UIDs of the pods on the nodes then, for each group that
    failed and has not tried again; it is dropped when the group tries again or its PodGroup
    is deleted. Checking for news walks the snapshot's pods once per attempt of a member of a
    failed group, as counting the group's placed members already does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import PodGroup, pod_group_key

NOTHING_CHANGED = "nothing that could let it fit has changed since"


NodeFacts = tuple[Any, ...]
"""What of a node decides where pods may go: allocatable, labels, taints, unschedulable."""


@dataclass(frozen=True)
class _Failure:
    others: frozenset[str]
    """UIDs of the pods on the nodes (other than the group's own) at the failure."""
    nodes: dict[str, NodeFacts]
    """Node name -> its facts at the failure."""
    members: int
    group_version: str


def _facts(info: api.NodeInfo, node: Node) -> NodeFacts:
    allocatable = info.allocatable
    return (
        allocatable.milli_cpu,
        allocatable.memory,
        allocatable.ephemeral_storage,
        allocatable.allowed_pod_number,
        tuple(sorted(allocatable.scalar.items())),
        tuple(sorted(node.labels.items())),
        tuple((taint.key, taint.value, taint.effect) for taint in node.taints),
        node.unschedulable,
    )


class FailureMemory:
    def __init__(self) -> None:
        self._failures: dict[str, _Failure] = {}

    def remember(self, group: PodGroup, members: int, nodes: Iterable[api.NodeInfo]) -> None:
        """``group`` failed now, with ``members`` pods, on ``nodes``."""
        others: set[str] = set()
        facts: dict[str, NodeFacts] = {}
        for info in nodes:
            if info.node is None:
                continue
            facts[info.name] = _facts(info, info.node)
            others.update(pod.uid for pod in info.pods if not _is_member(pod, group))
        self._failures[group.key] = _Failure(
            frozenset(others), facts, members, group.resource_version
        )

    def waits(self, group: PodGroup, members: int, nodes: Iterable[api.NodeInfo]) -> bool:
        """Whether ``group`` failed and nothing changed since; the failure is forgotten once
        something did."""
        failure = self._failures.get(group.key)
        if failure is None:
            return False
        if _changed(failure, group, members, nodes):
            del self._failures[group.key]
            return False
        return True

    def room_was_held(self, group_key: str, uid: str) -> bool | None:
        """Whether the pod ``uid`` was on a node when the group failed; ``None`` when the group
        has no failure remembered."""
        failure = self._failures.get(group_key)
        return None if failure is None else uid in failure.others

    def forget_missing(self, exists: Callable[[str], bool]) -> None:
        """Drop the failures of the groups that no longer exist."""
        for key in [key for key in self._failures if not exists(key)]:
            del self._failures[key]

    def __contains__(self, group_key: str) -> bool:
        return group_key in self._failures


def _is_member(pod: Pod, group: PodGroup) -> bool:
    return pod_group_key(pod.namespace, pod.labels) == group.key


def _changed(
    failure: _Failure, group: PodGroup, members: int, nodes: Iterable[api.NodeInfo]
) -> bool:
    if members != failure.members or group.resource_version != failure.group_version:
        return True
    seen: set[str] = set()
    names = 0
    for info in nodes:
        if info.node is None:
            continue
        names += 1
        if failure.nodes.get(info.name) != _facts(info, info.node):
            return True
        seen.update(pod.uid for pod in info.pods)
    return names != len(failure.nodes) or not failure.others <= seen
