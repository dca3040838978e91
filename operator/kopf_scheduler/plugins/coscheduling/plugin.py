"""The Coscheduling plugin: all of a group's members get nodes together, or none keeps one.

- **QueueSort** keeps a group's members together in the active queue: higher priority first,
  then the earlier of the group's creation time (for a member) or the pod's first attempt (for a
  pod of no group), then ``namespace/name``. A profile enabling Coscheduling disables
  PrioritySort, whose place it takes.
- **PreFilter** turns a member away while the group backs off after a failure, while fewer than
  ``minMember`` of its pods exist, or while the cluster's free capacity cannot hold
  ``minResources``; once ``minMember`` members are placed, further members pass without these
  checks. A member whose PodGroup does not exist passes, so that preemption still runs for it
  when it finds no node, and Permit turns it away.
- **Permit** holds each member, assumed on its node, until ``minMember`` members are placed, then
  lets them all go; a member waits at most the group's ``scheduleTimeoutSeconds``, else (absent
  or 0) ``permitWaitingTimeSeconds``. A member of a missing PodGroup is rejected here.
- **PostFilter** (a member found no node) first asks the gang preemptor (by default
  :class:`~.gang_preemption.GangPreemption`) to make room for the whole group; per-pod
  preemption leaves the members of a group short of ``minMember`` to it. Without a plan,
  PostFilter rejects the group's waiting members, so no member keeps room the group cannot
  use, and starts the group's back-off, unless at most 10 % of ``minMember`` is missing.
  **Unreserve** (a member's Permit timed out or was rejected, or its binding failed) rejects
  the group's other waiting members too, without a back-off.
- A failed group goes back through the queue like any unschedulable pod: the first member placed
  again brings back only the siblings PreFilter turned away (which no cluster event would bring
  back), not those rejected with the group; those retry after their back-off when room is given
  back by pods of other groups, a node comes, or their group changes. Room the group's own
  members give back is no news to it, so a group that cannot fit does not retry itself in a
  loop ahead of every other pod.
- A group whose failure in PostFilter gave room back (members waiting at Permit were rejected),
  with no other member to complete it, waits for news (:mod:`.failures`): PreFilter turns its
  members away until something that was there at the failure changed, so two groups that
  cannot fit do not wake each other with the room their failed attempts give back.

Messages follow scheduler-plugins', so that what ``kubectl describe`` shows reads the same.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.plugins.coscheduling.args import CoschedulingArgs
from kopf_scheduler.plugins.coscheduling.failures import NOTHING_CHANGED, FailureMemory
from kopf_scheduler.plugins.coscheduling.gang_preemption import GangPreemption
from kopf_scheduler.plugins.coscheduling.groups import GroupManager, group_of, is_member
from kopf_scheduler.plugins.coscheduling.preemptor import GangPreemptor
from kopf_scheduler.plugins.coscheduling.resource_gap import describe_gap, resource_gap
from kopf_scheduler.plugins.coscheduling.state import group_state
from kopf_scheduler.preemption.gang_planner import GANG_PREEMPTION, PLANNING

NAME = "Coscheduling"

POD_GROUP_MISSING = "can not find pod group"
"""PostFilter's message for a member whose PodGroup does not exist (Permit rejects it)."""

SMALL_GAP = 0.1
"""PostFilter leaves the group's waiting members alone when at most this share of ``minMember``
is missing: the next members may still make it (scheduler-plugins' rule)."""


class Coscheduling:
    name: ClassVar[str] = NAME

    def __init__(
        self,
        args: CoschedulingArgs,
        handle: api.Handle,
        gang_preemptor: GangPreemptor | None = None,
    ) -> None:
        self._args = args
        self._handle = handle
        self._gang_preemptor = gang_preemptor
        self._groups = GroupManager(
            handle.pod_groups,
            lambda: handle.snapshot.node_info_list,
            handle.now,
            args.pod_group_backoff_seconds,
        )
        self._failures = FailureMemory()
        self._turned_away: dict[str, set[str]] = {}
        """Group key -> UIDs of members PreFilter turned away since the group's last start."""

    # QueueSort --------------------------------------------------------------------------------

    def less(self, a: api.QueuedPodInfo, b: api.QueuedPodInfo) -> bool:
        if a.pod.priority != b.pod.priority:
            return a.pod.priority > b.pod.priority
        since_a = self._queued_since(a)
        since_b = self._queued_since(b)
        if since_a != since_b:
            return since_a < since_b
        return a.pod.key < b.pod.key

    def _queued_since(self, info: api.QueuedPodInfo) -> float:
        """The group's creation time for a member of an existing group, else the pod's first
        attempt (its arrival, before any)."""
        key = group_of(info.pod)
        group = self._groups.get(key) if key is not None else None
        if group is not None:
            return group.creation_timestamp
        if info.initial_attempt_timestamp is not None:
            return info.initial_attempt_timestamp
        return info.timestamp

    # PreFilter --------------------------------------------------------------------------------

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        key = group_of(pod)
        if key is None:
            return None, api.SUCCESS
        group = self._groups.get(key)
        if group is None:
            # Permit turns it away; until then it goes through the cycle (and preemption).
            return None, api.SUCCESS
        if self._groups.in_backoff(key):
            # Unresolvable, as every PreFilter rejection here: preemption must not evict pods
            # for a member its own group will turn away again.
            return None, self._turn_away(key, pod, f"podGroup {key} failed recently")
        placed = self._groups.placed_count(key, but=pod)
        if placed >= group.min_member:
            return None, api.SUCCESS
        members = self._groups.member_count(key)
        if members < group.min_member:
            return None, self._turn_away(
                key,
                pod,
                f"pre-filter pod {pod.name} cannot find enough sibling pods, "
                f"current pods number: {members}, minMember of group: {group.min_member}",
            )
        if self._failures.waits(group, members, self._handle.snapshot.node_info_list):
            return None, self._turn_away(key, pod, f"podGroup {key} failed and {NOTHING_CHANGED}")
        # A gang preemption plan is about to change the free capacity: it checks the room itself.
        gap = (
            None
            if state.get(PLANNING)
            else resource_gap(group, self._handle.snapshot.node_info_list)
        )
        if gap is not None:
            return None, self._turn_away(key, pod, describe_gap(gap))
        if self._gang_preemptor is not None and not _gap_is_small(group, placed):
            state.write(GANG_PREEMPTION, True)
        return None, api.SUCCESS

    def _turn_away(self, group_key: str, pod: Pod, message: str) -> api.Status:
        self._turned_away.setdefault(group_key, set()).add(pod.uid)
        return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, message)

    def pre_filter_extensions(self) -> None:
        return None

    # PostFilter -------------------------------------------------------------------------------

    def post_filter(
        self, state: api.CycleState, pod: Pod, node_to_status: api.NodeToStatus
    ) -> tuple[api.PostFilterResult | None, api.Status]:
        key = group_of(pod)
        if key is None:
            return None, api.Status(api.Code.UNSCHEDULABLE)
        group = self._groups.get(key)
        if group is None:
            return None, api.Status(api.Code.UNSCHEDULABLE, POD_GROUP_MISSING)
        placed = self._groups.placed_count(key, but=pod)
        if placed >= group.min_member:
            return None, api.Status(api.Code.UNSCHEDULABLE)
        if _gap_is_small(group, placed):
            return None, api.Status(api.Code.UNSCHEDULABLE)
        rejected = _rejected_by_post_filter(key, pod)
        if key in self._failures:
            # PreFilter turned the member away: the group waits for news, no plan can help.
            return None, rejected
        if self._gang_preemptor is not None and self._handle.framework is not None:
            handled = self._gang_preemptor.preempt_for_group(
                self._handle.framework, state, pod, key
            )
            if handled is not None:
                return handled
        gave_back = self._reject_waiting(key, "optimistic rejection in PostFilter")
        members = self._groups.member_count(key)
        if members >= group.min_member:
            self._groups.back_off(key)
        # Members not on a node yet: this one and its pending siblings, less those just
        # rejected at Permit (still unbound in the store). No more than the group lacks: no
        # other member could complete it instead.
        to_place = len(self._groups.pending_members(key, but=pod)) + 1 - gave_back
        if gave_back and to_place <= group.min_member - placed:
            self._failures.forget_missing(lambda known: self._groups.get(known) is not None)
            self._failures.remember(group, members, self._handle.snapshot.node_info_list)
        return None, rejected

    # Reserve ----------------------------------------------------------------------------------

    def reserve(self, state: api.CycleState, pod: Pod, node_name: str) -> api.Status:
        return api.SUCCESS

    def unreserve(self, state: api.CycleState, pod: Pod, node_name: str) -> None:
        key = group_of(pod)
        if key is None or self._groups.get(key) is None:
            return
        self._reject_waiting(key, "rejection in Unreserve")

    # Permit -----------------------------------------------------------------------------------

    def permit(self, state: api.CycleState, pod: Pod, node_name: str) -> tuple[api.Status, float]:
        key = group_of(pod)
        if key is None:
            return api.SUCCESS, 0.0
        group = self._groups.get(key)
        if group is None:
            return api.Status(api.Code.UNSCHEDULABLE, "PodGroup not found"), 0.0
        placed_before = self._groups.placed_count(key, but=pod)
        if placed_before + 1 >= group.min_member:
            for waiting in self._handle.waiting_pods():
                if is_member(waiting.pod, key):
                    waiting.allow(NAME)
            return api.SUCCESS, 0.0
        if placed_before == 0:
            # The first member placed: its siblings turned away before may now pass PreFilter.
            turned_away = self._turned_away.pop(key, set())
            siblings = self._groups.pending_members(key, but=pod)
            self._handle.activate([sibling for sibling in siblings if sibling.uid in turned_away])
        return api.Status(api.Code.WAIT), self._wait_seconds(group)

    def _wait_seconds(self, group: PodGroup) -> float:
        if group.schedule_timeout_seconds:
            return float(group.schedule_timeout_seconds)
        return float(self._args.permit_waiting_time_seconds)

    def _reject_waiting(self, group_key: str, message: str) -> int:
        """Reject the group's members waiting at Permit; how many there were."""
        rejected = 0
        for waiting in self._handle.waiting_pods():
            if is_member(waiting.pod, group_key):
                waiting.reject(NAME, message)
                rejected += 1
        return rejected

    # Requeueing -------------------------------------------------------------------------------

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.POD, api.ActionType.ADD),
                _is_schedulable_after_pod_added,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.POD_GROUP, api.ActionType.ADD | api.ActionType.UPDATE_GENERIC
                ),
                _is_schedulable_after_pod_group_change,
            ),
            api.ClusterEventWithHint(
                # The node changes a failed group waits for (.failures), besides new room.
                api.ClusterEvent(
                    api.EventResource.NODE,
                    api.ActionType.ADD
                    | api.ActionType.UPDATE_NODE_ALLOCATABLE
                    | api.ActionType.UPDATE_NODE_LABEL
                    | api.ActionType.UPDATE_NODE_TAINT,
                )
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.ASSIGNED_POD, api.ActionType.DELETE),
                self._is_schedulable_after_assigned_pod_deleted,
            ),
        ]

    def _is_schedulable_after_assigned_pod_deleted(
        self, pod: Pod, old: Any, new: Any
    ) -> api.QueueingHint:
        """Room given back helps a member, unless its own group gave it back (its failed
        attempt ending, which is no news to the group), or its group failed and the pod was not
        there then (its room was free at the failure)."""
        if not isinstance(old, Pod):
            return api.QueueingHint.QUEUE
        key = group_of(pod)
        if key is None:
            return api.QueueingHint.QUEUE
        if group_of(old) == key or self._failures.room_was_held(key, old.uid) is False:
            return api.QueueingHint.QUEUE_SKIP
        return api.QueueingHint.QUEUE

    # Decision records ---------------------------------------------------------------------------

    def explain_pod(self, pod: Pod) -> Mapping[str, Any] | None:
        return group_state(self._groups, self._handle.waiting_pods(), pod)


def _rejected_by_post_filter(group_key: str, pod: Pod) -> api.Status:
    return api.Status(
        api.Code.UNSCHEDULABLE,
        f"PodGroup {group_key} gets rejected due to Pod {pod.name} "
        "is unschedulable even after PostFilter",
    )


def _gap_is_small(group: PodGroup, placed: int) -> bool:
    """Whether at most :data:`SMALL_GAP` of ``minMember`` is missing (then the group is neither
    rejected nor preempted for as a whole: its next members may still make it)."""
    return bool(group.min_member) and (group.min_member - placed) / group.min_member <= SMALL_GAP


def _is_schedulable_after_pod_added(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """A new pod helps the members of its own group (it may complete ``minMember``)."""
    if not isinstance(new, Pod):
        return api.QueueingHint.QUEUE
    key = group_of(pod)
    if key is not None and group_of(new) == key:
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def _is_schedulable_after_pod_group_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """A PodGroup created or changed helps its own members."""
    if not isinstance(new, PodGroup):
        return api.QueueingHint.QUEUE
    if group_of(pod) == new.key:
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def new(
    args: Mapping[str, Any] | None,
    handle: api.Handle,
    *,
    gang_preemptor: GangPreemptor | None = None,
) -> Coscheduling:
    """The plugin; unless ``gangPreemption`` is false, with ``gang_preemptor`` or else
    :class:`~.gang_preemption.GangPreemption` over ``handle``."""
    parsed = CoschedulingArgs.parse(args)
    if not parsed.gang_preemption:
        gang_preemptor = None
    elif gang_preemptor is None:
        gang_preemptor = GangPreemption(handle, NAME)
    return Coscheduling(parsed, handle, gang_preemptor)
