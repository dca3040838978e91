"""A PodGroup's status from its members: the phase machine of Coscheduling's PodGroup controller.

scheduler-plugins v0.31.8 (``pkg/controllers/podgroup_controller.go``) reconciles a group on every
change of it or of its pods, one step at a time, and each written step is itself a change that
triggers the next. :func:`settle` takes the same steps until one changes nothing, so a write
carries the status that controller ends at, not each stop on the way. One step, by the stored
phase:

- ``Finished``, ``Failed``: final; nothing changes any more.
- ``""`` (new group): -> ``Pending``; counts untouched.
- ``Pending``: -> ``Scheduling`` once the group has at least ``minMember`` pods, and
  ``occupiedBy`` is set from the first member's owners (kept when it has none). The counts stay
  as they are while the group is ``Pending``.
- any other phase (``Scheduling``, ``Running``, also unknown ones): ``running``, ``succeeded``
  and ``failed`` are counted again, then the first rule that fits, in this order of precedence
  (a later one wins): fewer than ``minMember`` pods -> ``Pending`` (and stop); running plus
  succeeded below ``minMember`` -> ``Scheduling``, else -> ``Running``; any failed pod with
  failed plus running plus succeeded reaching ``minMember`` -> ``Failed``; succeeded reaching
  ``minMember`` -> ``Finished``.

Before a step, a ``Pending`` or ``Scheduling`` group with no running pod whose
``scheduleStartTime`` is more than 48 hours after its creation is left alone, with a ``Timeout``
warning (:func:`gave_up`). Nothing here sets ``scheduleStartTime`` or reads
``scheduleTimeoutSeconds``, as in that controller: the timeout bounds how long the Coscheduling
plugin keeps members waiting at Permit.

Zero counts and an empty ``occupiedBy`` are absent from the status, as the controller's Go
structs (``omitempty``) write them.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.pod_group_controller.census import GroupCounts

PENDING = "Pending"
SCHEDULING = "Scheduling"
RUNNING = "Running"
FINISHED = "Finished"
FAILED = "Failed"
FINAL_PHASES = frozenset({FINISHED, FAILED})

GIVE_UP_AFTER = 48 * 3600.0
"""Seconds from creation to ``scheduleStartTime`` after which a waiting group is left alone."""
TIMEOUT_REASON = "Timeout"
TIMEOUT_NOTE = "schedule time longer than 48 hours"

_MAX_STEPS = 8
"""More than the longest chain of steps ("" -> Pending -> Scheduling -> a counted phase)."""


@dataclass(frozen=True, slots=True)
class GroupStatus:
    """The fields of ``PodGroup.status`` the lifecycle writes."""

    phase: str = ""
    occupied_by: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0

    @classmethod
    def of(cls, group: PodGroup) -> GroupStatus:
        return cls(group.phase, group.occupied_by, group.running, group.succeeded, group.failed)


def step(status: GroupStatus, min_member: int, counts: GroupCounts) -> GroupStatus:
    """One reconcile of the controller: the status after it."""
    if status.phase in FINAL_PHASES:
        return status
    if status.phase == "":
        return replace(status, phase=PENDING)
    if status.phase == PENDING:
        if counts.pods < min_member:
            return status
        return replace(
            status, phase=SCHEDULING, occupied_by=counts.occupied_by or status.occupied_by
        )
    counted = replace(
        status, running=counts.running, succeeded=counts.succeeded, failed=counts.failed
    )
    if counts.pods < min_member:
        return replace(counted, phase=PENDING)
    active = counts.running + counts.succeeded
    phase = SCHEDULING if active < min_member else RUNNING
    if counts.failed and counts.failed + active >= min_member:
        phase = FAILED
    if counts.succeeded >= min_member:
        phase = FINISHED
    return replace(counted, phase=phase)


def gave_up(group: PodGroup, status: GroupStatus) -> bool:
    """Whether the controller leaves the group alone: waiting, nothing running, and
    ``scheduleStartTime`` more than 48 hours after creation."""
    start = group.schedule_start_time
    return (
        status.phase in (PENDING, SCHEDULING)
        and status.running == 0
        and start is not None
        and start - group.creation_timestamp > GIVE_UP_AFTER
    )


@dataclass(frozen=True, slots=True)
class Settled:
    status: GroupStatus
    gave_up: bool
    """The 48-hour rule stopped the steps (at ``status``)."""


def settle(group: PodGroup, counts: GroupCounts) -> Settled:
    """Where the controller's steps end for ``group`` with these members."""
    status = GroupStatus.of(group)
    for _ in range(_MAX_STEPS):
        if gave_up(group, status):
            return Settled(status, gave_up=True)
        following = step(status, group.min_member, counts)
        if following == status:
            break
        status = following
    return Settled(status, gave_up=False)


def status_patch(old: GroupStatus, new: GroupStatus) -> dict[str, Any]:
    """The JSON merge patch turning ``old`` into ``new``; ``{}`` when they are equal."""
    changed: dict[str, Any] = {}
    for field, before, after in (
        ("phase", old.phase, new.phase),
        ("occupiedBy", old.occupied_by, new.occupied_by),
        ("running", old.running, new.running),
        ("succeeded", old.succeeded, new.succeeded),
        ("failed", old.failed, new.failed),
    ):
        if before != after:
            changed[field] = after or None
    return {"status": changed} if changed else {}
