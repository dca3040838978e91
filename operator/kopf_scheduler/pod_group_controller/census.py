"""Each PodGroup's member pods, counted from the pod watch.

Coscheduling's PodGroup controller lists a group's pods on every reconcile. The scheduler already
watches every pod, so the counts are kept from its events instead: one small record per member
pod, and a group is marked changed only when something its status is computed from changes (its
membership, or a member's phase, node or owners). A pod of no group costs a dictionary lookup.

A group is ``namespace/name``: the label ``scheduling.x-k8s.io/pod-group`` names a PodGroup in
the pod's own namespace. Deleted pods leave the count when their DELETED event arrives, as they
leave an informer's list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.pod_group import POD_GROUP_LABEL

DELETED = "DELETED"

RUNNING = "Running"
SUCCEEDED = "Succeeded"
FAILED = "Failed"


@dataclass(frozen=True, slots=True)
class Member:
    """What a group's status needs from one member pod."""

    group: str
    phase: str
    node_name: str
    owners: str
    """``namespace/name`` of each owner reference, sorted and comma-separated; "" for none."""


@dataclass(frozen=True, slots=True)
class GroupCounts:
    """A group's members right now; ``occupied_by`` is its first member's ``owners``."""

    pods: int = 0
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0
    occupied_by: str = ""


class PodGroupCensus:
    """Member pods by group, fed every pod event; ``on_change`` hears of each changed group."""

    def __init__(self, on_change: Callable[[str], None] = lambda _group: None) -> None:
        self._on_change = on_change
        self._members: dict[str, Member] = {}
        """Pod ``namespace/name`` -> its record, for member pods only."""
        self._groups: dict[str, dict[str, Member]] = {}
        """Group -> its members by pod key, in the order they were first seen."""

    def observe(self, event_type: str, raw_pod: Mapping[str, Any]) -> None:
        """Take in one pod watch event (ADDED, MODIFIED or DELETED) of any pod."""
        metadata = _mapping(raw_pod.get("metadata"))
        namespace = _text(metadata.get("namespace")) or "default"
        pod_key = f"{namespace}/{_text(metadata.get('name'))}"
        member = None if event_type == DELETED else _member(namespace, metadata, raw_pod)
        previous = self._members.get(pod_key)
        if member == previous:
            return
        if previous is not None:
            group = self._groups[previous.group]
            if member is None or member.group != previous.group:
                del group[pod_key]
                if not group:
                    del self._groups[previous.group]
                self._on_change(previous.group)
        if member is None:
            del self._members[pod_key]
            return
        self._members[pod_key] = member
        self._groups.setdefault(member.group, {})[pod_key] = member
        self._on_change(member.group)

    def counts(self, group: str) -> GroupCounts:
        """The members of ``group`` (``namespace/name``) by state; all zero for none."""
        members = self._groups.get(group)
        if not members:
            return GroupCounts()
        phases = [m.phase for m in members.values()]
        first = next(iter(members.values()))
        return GroupCounts(
            pods=len(members),
            scheduled=sum(1 for m in members.values() if m.node_name),
            running=phases.count(RUNNING),
            succeeded=phases.count(SUCCEEDED),
            failed=phases.count(FAILED),
            occupied_by=first.owners,
        )


def _member(
    namespace: str, metadata: Mapping[str, Any], raw_pod: Mapping[str, Any]
) -> Member | None:
    labels = _mapping(metadata.get("labels"))
    group_name = _text(labels.get(POD_GROUP_LABEL))
    if not group_name:
        return None
    owners = metadata.get("ownerReferences")
    owner_names = (
        sorted(f"{namespace}/{_text(o.get('name'))}" for o in owners if isinstance(o, Mapping))
        if isinstance(owners, list)
        else []
    )
    return Member(
        group=f"{namespace}/{group_name}",
        phase=_text(_mapping(raw_pod.get("status")).get("phase")),
        node_name=_text(_mapping(raw_pod.get("spec")).get("nodeName")),
        owners=",".join(owner_names),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""
