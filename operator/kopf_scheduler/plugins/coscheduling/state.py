"""Where a gang member's group stands, for decision records.

A member's own attempt says little: it may have found a node and still not be bound, because it
waits at Permit for the rest of its group, or be turned away while its group is short of pods.
What explains it is the group: how many pods it must place at once (``minMember``), how many
exist, how many already have a node (bound, or assumed while waiting at Permit or binding), and
how many are missing. The counts are the ones the plugin decides on: members known to the
scheduler, members placed in the scheduler's snapshot, pods held at Permit (a member whose wait
was just ended, allowed or rejected, still counts until its binding cycle takes it back); the
member asked about counts as placed while it waits at Permit or once it is bound.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.coscheduling.groups import GroupManager, group_of, is_member


def group_state(
    groups: GroupManager, waiting_pods: Iterable[api.WaitingPod], pod: Pod
) -> dict[str, Any] | None:
    """The state of ``pod``'s group as JSON-ready facts with a one-line ``summary``; ``None``
    for a pod of no group."""
    key = group_of(pod)
    if key is None:
        return None
    group = groups.get(key)
    if group is None:
        return {"group": key, "summary": f"PodGroup {key} not found"}
    held = [waiting.pod for waiting in waiting_pods if is_member(waiting.pod, key)]
    members = groups.member_count(key)
    pod_waits = any(member.uid == pod.uid for member in held)
    placed = groups.placed_count(key, but=pod) + int(pod_waits or bool(pod.node_name))
    if pod.node_name:
        # A member is bound only once its group reached minMember; the snapshot may not show
        # the members assumed since it was taken.
        placed = max(placed, group.min_member)
    missing = max(0, group.min_member - placed)
    state: dict[str, Any] = {
        "group": key,
        "minMember": group.min_member,
        "members": members,
        "placed": placed,
        "waiting": len(held),
        "missing": missing,
    }
    if groups.in_backoff(key):
        state["backingOff"] = True
    state["summary"] = _summary(
        group.min_member,
        members,
        placed,
        missing,
        held=len(held),
        pod_waits=pod_waits,
        backing_off=bool(state.get("backingOff")),
    )
    return state


def _summary(
    min_member: int,
    members: int,
    placed: int,
    missing: int,
    *,
    held: int,
    pod_waits: bool,
    backing_off: bool,
) -> str:
    placed_part = f"{placed} of {min_member} members placed"
    if missing == 0:
        return f"{placed_part}: the group is complete"
    if pod_waits:
        return f"waiting at Permit: {placed_part}, {missing} missing"
    if held:
        return f"{held} waiting at Permit: {placed_part}, {missing} missing"
    if members < min_member:
        return (
            f"waiting for members: {members} of {min_member} pods exist, "
            f"{min_member - members} not created yet"
        )
    if backing_off:
        return f"the group backs off after a failed attempt: {placed_part}, {missing} missing"
    return f"{placed_part}, {missing} missing"
