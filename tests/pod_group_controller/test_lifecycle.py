"""The phase machine of Coscheduling's PodGroup controller, one step and settled.

The cases of scheduler-plugins' controller tests (pkg/controllers/podgroup_controller_test.go)
are here with the status they end at, plus each branch of a single step.
"""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.pod_group_controller.census import GroupCounts
from kopf_scheduler.pod_group_controller.lifecycle import (
    FAILED,
    FINISHED,
    PENDING,
    RUNNING,
    SCHEDULING,
    GroupStatus,
    Settled,
    gave_up,
    settle,
    status_patch,
    step,
)
from tests.pod_group_controller.support import raw_pod_group


def counts(pods: int, running: int = 0, succeeded: int = 0, failed: int = 0) -> GroupCounts:
    return GroupCounts(
        pods=pods,
        scheduled=running + succeeded + failed,
        running=running,
        succeeded=succeeded,
        failed=failed,
        occupied_by="team/trainer",
    )


@pytest.mark.parametrize(
    ("before", "min_member", "members", "after"),
    [
        pytest.param(
            GroupStatus(), 2, counts(0), GroupStatus(phase=PENDING), id="new-group-is-pending"
        ),
        pytest.param(
            GroupStatus(PENDING),
            3,
            counts(2, running=2),
            GroupStatus(PENDING),
            id="pending-below-min-member-keeps-its-counts",
        ),
        pytest.param(
            GroupStatus(PENDING),
            2,
            counts(2, running=2),
            GroupStatus(SCHEDULING, occupied_by="team/trainer"),
            id="pending-to-scheduling-names-the-owner-without-counting",
        ),
        pytest.param(
            GroupStatus(PENDING, occupied_by="team/old"),
            2,
            GroupCounts(pods=2),
            GroupStatus(SCHEDULING, occupied_by="team/old"),
            id="an-owner-less-first-member-keeps-occupied-by",
        ),
        pytest.param(
            GroupStatus(PENDING),
            0,
            GroupCounts(),
            GroupStatus(SCHEDULING),
            id="min-member-zero-schedules-an-empty-group",
        ),
        pytest.param(
            GroupStatus(SCHEDULING, running=1),
            2,
            counts(2, running=1),
            GroupStatus(SCHEDULING, running=1),
            id="scheduling-stays-below-min-member-running",
        ),
        pytest.param(
            GroupStatus(SCHEDULING),
            2,
            counts(4, running=1, succeeded=1),
            GroupStatus(RUNNING, running=1, succeeded=1),
            id="scheduling-to-running-counts-succeeded-too",
        ),
        pytest.param(
            GroupStatus(RUNNING, running=2),
            4,
            counts(2, running=2),
            GroupStatus(PENDING, running=2),
            id="running-to-pending-when-pods-are-gone",
        ),
        pytest.param(
            GroupStatus(RUNNING, running=3),
            3,
            counts(3, running=2),
            GroupStatus(SCHEDULING, running=2),
            id="running-back-to-scheduling",
        ),
        pytest.param(
            GroupStatus(RUNNING, running=2),
            2,
            counts(2, running=1, failed=1),
            GroupStatus(FAILED, running=1, failed=1),
            id="a-failed-member-fails-the-group",
        ),
        pytest.param(
            GroupStatus(SCHEDULING),
            3,
            counts(3, running=1, failed=1),
            GroupStatus(SCHEDULING, running=1, failed=1),
            id="a-failure-below-min-member-does-not-fail-it",
        ),
        pytest.param(
            GroupStatus(RUNNING, running=2),
            2,
            counts(3, succeeded=2, failed=1),
            GroupStatus(FINISHED, succeeded=2, failed=1),
            id="finished-wins-over-failed",
        ),
        pytest.param(
            GroupStatus("Unknown"),
            1,
            counts(1, running=1),
            GroupStatus(RUNNING, running=1),
            id="an-unknown-phase-is-counted-like-scheduling",
        ),
        pytest.param(
            GroupStatus(FINISHED, succeeded=2),
            2,
            counts(0),
            GroupStatus(FINISHED, succeeded=2),
            id="finished-is-final",
        ),
        pytest.param(
            GroupStatus(FAILED, failed=2),
            2,
            counts(2, running=2),
            GroupStatus(FAILED, failed=2),
            id="failed-is-final",
        ),
    ],
)
def test_one_step(
    before: GroupStatus, min_member: int, members: GroupCounts, after: GroupStatus
) -> None:
    assert step(before, min_member, members) == after


def pod_group(min_member: int, status: dict[str, Any] | None = None, **kw: Any) -> PodGroup:
    return PodGroup(raw_pod_group(min_member=min_member, status=status, **kw))


@pytest.mark.parametrize(
    ("min_member", "stored", "members", "phase"),
    [
        # The cases of the upstream controller test, by name there.
        pytest.param(2, SCHEDULING, counts(2, running=2), RUNNING, id="group-running"),
        pytest.param(2, SCHEDULING, counts(4, running=4), RUNNING, id="more-than-min-member"),
        pytest.param(2, SCHEDULING, counts(2, failed=2), FAILED, id="group-failed"),
        pytest.param(2, SCHEDULING, counts(2, succeeded=2), FINISHED, id="group-finished"),
        pytest.param(2, PENDING, counts(2), SCHEDULING, id="pending-to-scheduling"),
        pytest.param(2, PENDING, counts(2, succeeded=2), FINISHED, id="pending-to-finished"),
        pytest.param(3, PENDING, counts(2, running=2), PENDING, id="keeps-pending"),
        pytest.param(3, PENDING, counts(2), PENDING, id="min-member-above-pods"),
        pytest.param(4, RUNNING, counts(2), PENDING, id="running-to-pending"),
        # A new group reaches its phase in one write.
        pytest.param(2, "", counts(2, running=2), RUNNING, id="new-group-straight-to-running"),
        pytest.param(2, "", counts(1), PENDING, id="new-group-waits"),
    ],
)
def test_settle_ends_where_the_controller_does(
    min_member: int, stored: str, members: GroupCounts, phase: str
) -> None:
    settled = settle(pod_group(min_member, {"phase": stored} if stored else None), members)

    assert settled.status.phase == phase
    assert not settled.gave_up


def test_settle_takes_counts_and_owner_on_the_way_from_a_new_group() -> None:
    settled = settle(pod_group(2), counts(3, running=2, succeeded=1))

    assert settled.status == GroupStatus(
        RUNNING, occupied_by="team/trainer", running=2, succeeded=1
    )


def test_settle_stops_at_a_final_phase() -> None:
    group = pod_group(2, {"phase": FINISHED, "succeeded": 2})

    assert settle(group, counts(0)).status == GroupStatus(FINISHED, succeeded=2)


CREATED_LONG_AGO = "2026-11-01T00:00:00Z"
STARTED_THREE_DAYS_LATER = "2026-11-04T00:00:00Z"
STARTED_A_DAY_LATER = "2026-11-02T00:00:00Z"


@pytest.mark.parametrize(
    ("status", "expected"),
    [
        pytest.param(
            {"phase": PENDING, "scheduleStartTime": STARTED_THREE_DAYS_LATER},
            True,
            id="pending-started-72h-after-creation",
        ),
        pytest.param(
            {"phase": SCHEDULING, "scheduleStartTime": STARTED_THREE_DAYS_LATER},
            True,
            id="scheduling-started-72h-after-creation",
        ),
        pytest.param(
            {"phase": PENDING, "scheduleStartTime": STARTED_A_DAY_LATER},
            False,
            id="within-48h",
        ),
        pytest.param(
            {"phase": SCHEDULING, "running": 1, "scheduleStartTime": STARTED_THREE_DAYS_LATER},
            False,
            id="something-runs",
        ),
        pytest.param(
            {"phase": RUNNING, "scheduleStartTime": STARTED_THREE_DAYS_LATER},
            False,
            id="running-group",
        ),
        pytest.param({"phase": PENDING}, False, id="no-schedule-start-time"),
    ],
)
def test_the_48_hour_rule(status: dict[str, Any], expected: bool) -> None:
    group = pod_group(2, status, created=CREATED_LONG_AGO)

    assert gave_up(group, GroupStatus.of(group)) is expected
    settled = settle(group, counts(2, running=2))
    assert settled.gave_up is expected
    if expected:
        assert settled.status == GroupStatus.of(group)


def test_the_48_hour_rule_applies_after_the_first_step() -> None:
    group = pod_group(2, {"scheduleStartTime": STARTED_THREE_DAYS_LATER}, created=CREATED_LONG_AGO)

    settled = settle(group, counts(2))

    assert settled == Settled(GroupStatus(PENDING), gave_up=True)


def test_status_patch_carries_only_the_changes_and_removes_what_becomes_empty() -> None:
    old = GroupStatus(RUNNING, occupied_by="team/a", running=2, succeeded=0, failed=1)
    new = GroupStatus(FINISHED, occupied_by="team/a", running=0, succeeded=2, failed=1)

    assert status_patch(old, new) == {
        "status": {"phase": FINISHED, "running": None, "succeeded": 2}
    }
    assert status_patch(new, new) == {}
    assert status_patch(GroupStatus(PENDING, occupied_by="team/a"), GroupStatus(PENDING)) == {
        "status": {"occupiedBy": None}
    }
