"""Status writes: coalesced per pass, by the leader only, with an Event per phase change."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from kopf_scheduler.pod_group_controller.status_keeper import PodGroupStatusKeeper
from kopf_scheduler.ports import ApiError, ObjectRef
from tests.clock import FakeClock
from tests.pod_group_controller.support import FakeEvents, FakeWriter, raw_pod, raw_pod_group


class Leadership:
    def __init__(self, leading: bool = True) -> None:
        self.leading = leading

    def __call__(self) -> bool:
        return self.leading


class Setup:
    def __init__(self, leading: bool = True) -> None:
        self.writer = FakeWriter()
        self.events = FakeEvents()
        self.clock = FakeClock()
        self.leadership = Leadership(leading)
        self.keeper = PodGroupStatusKeeper(
            self.writer,
            self.events,
            self.clock,
            is_leader=self.leadership,
            reporting_controller="kopf-scheduler",
            interval=1.0,
        )

    def add_group(self, name: str = "gang", **kw: Any) -> None:
        raw = raw_pod_group(name, **kw)
        self.writer.hold(raw)
        self.keeper.observe_group("ADDED", raw)

    def stored_status(self, name: str = "gang", namespace: str = "team") -> Any:
        return self.writer.groups[(namespace, name)]["status"]

    def echo_writes(self) -> None:
        """Deliver the watch events of what was written, as kopf would."""
        for raw in self.writer.groups.values():
            self.keeper.observe_group("MODIFIED", raw)


@pytest.fixture
def setup() -> Setup:
    return Setup()


async def test_a_burst_of_pod_events_makes_one_write_per_group(setup: Setup) -> None:
    setup.add_group(min_member=8)
    for phase, node in (("Pending", ""), ("Pending", "n1"), ("Running", "n1")):
        for index in range(8):
            setup.keeper.census.observe("MODIFIED", raw_pod(f"p{index}", phase=phase, node=node))

    await setup.keeper.tick()

    assert len(setup.writer.patches) == 1
    assert setup.stored_status() == {
        "phase": "Running",
        "occupiedBy": "team/trainer",
        "running": 8,
    }


async def test_500_groups_of_8_cost_at_most_one_write_each_per_pass(setup: Setup) -> None:
    for group in range(500):
        setup.add_group(f"g{group}", min_member=8)
    for phase in ("Pending", "Running"):
        for group in range(500):
            for index in range(8):
                pod = raw_pod(f"g{group}-p{index}", group=f"g{group}", phase=phase)
                setup.keeper.census.observe("MODIFIED", pod)

    await setup.keeper.tick()
    assert len(setup.writer.patches) == 500

    setup.echo_writes()
    await setup.keeper.tick()
    assert len(setup.writer.patches) == 500, "an unchanged status is not written again"


async def test_the_echo_of_a_write_writes_nothing(setup: Setup) -> None:
    setup.add_group(min_member=1)
    setup.keeper.census.observe("ADDED", raw_pod("a", phase="Running"))
    await setup.keeper.tick()
    setup.echo_writes()

    await setup.keeper.tick()

    assert len(setup.writer.patches) == 1


async def test_a_follower_writes_nothing_and_checks_every_group_on_taking_over() -> None:
    setup = Setup(leading=False)
    setup.add_group("quiet", min_member=1)
    setup.add_group("busy", min_member=1)
    setup.keeper.census.observe("ADDED", raw_pod("a", group="busy", phase="Running"))
    await setup.keeper.tick()
    assert setup.writer.patches == []

    setup.leadership.leading = True
    await setup.keeper.tick()

    assert sorted(name for _, name, _ in setup.writer.patches) == ["busy", "quiet"]
    assert setup.stored_status("busy")["phase"] == "Running"
    assert setup.stored_status("quiet")["phase"] == "Pending"


async def test_taking_over_rechecks_groups_that_changed_under_another_leader() -> None:
    setup = Setup(leading=True)
    setup.add_group(min_member=1)
    setup.keeper.census.observe("ADDED", raw_pod("a", phase="Running"))
    await setup.keeper.tick()
    setup.echo_writes()
    setup.leadership.leading = False
    await setup.keeper.tick()
    # Meanwhile another leader wrote something stale, which this replica has seen.
    stale = raw_pod_group(min_member=1, status={"phase": "Scheduling"})
    setup.writer.hold(stale)
    setup.keeper.observe_group("MODIFIED", stale)
    await setup.keeper.tick()
    assert len(setup.writer.patches) == 1

    setup.leadership.leading = True
    await setup.keeper.tick()

    assert setup.stored_status()["phase"] == "Running"


async def test_pods_of_a_missing_group_wait_for_it(setup: Setup) -> None:
    setup.keeper.census.observe("ADDED", raw_pod("a", phase="Running"))
    setup.keeper.census.observe("ADDED", raw_pod("b", phase="Running"))
    await setup.keeper.tick()
    assert setup.writer.patches == []

    setup.add_group(min_member=2)
    await setup.keeper.tick()

    assert setup.stored_status()["phase"] == "Running"


async def test_each_phase_change_is_an_event_about_the_pod_group(setup: Setup) -> None:
    setup.add_group(min_member=2)
    await setup.keeper.tick()
    setup.echo_writes()
    for name in ("a", "b"):
        setup.keeper.census.observe("ADDED", raw_pod(name, phase="Running", node="n1"))
    await setup.keeper.tick()
    setup.echo_writes()
    setup.keeper.census.observe("MODIFIED", raw_pod("a", phase="Failed", node="n1"))
    await setup.keeper.tick()

    assert [(e.type, e.reason, e.note) for e in setup.events.events] == [
        ("Normal", "Pending", "0 of minMember 2 pods exist"),
        ("Normal", "Running", "2 of minMember 2 pods running or succeeded"),
        ("Warning", "Failed", "1 pods failed, 1 running or succeeded"),
    ]
    event = setup.events.events[0]
    assert event.regarding == ObjectRef(
        "team", "gang", "uid-pg-team-gang", "scheduling.x-k8s.io/v1alpha1", "PodGroup"
    )
    assert event.action == "UpdatePhase"
    assert event.reporting_controller == "kopf-scheduler"


async def test_a_count_change_is_written_without_an_event(setup: Setup) -> None:
    setup.add_group(min_member=1)
    setup.keeper.census.observe("ADDED", raw_pod("a", phase="Running"))
    await setup.keeper.tick()
    setup.echo_writes()
    setup.keeper.census.observe("ADDED", raw_pod("b", phase="Running"))

    await setup.keeper.tick()

    assert setup.writer.patches[-1] == ("team", "gang", {"status": {"running": 2}})
    assert len(setup.events.events) == 1


async def test_a_failed_write_is_tried_again_at_the_next_pass(setup: Setup) -> None:
    setup.add_group(min_member=1)
    setup.writer.failures.append(ApiError(500, "InternalError", "etcd is away"))

    await setup.keeper.tick()
    assert "phase" not in setup.stored_status()
    assert setup.events.events == []

    await setup.keeper.tick()
    assert setup.stored_status()["phase"] == "Pending"
    assert len(setup.writer.patches) == 2


async def test_a_group_that_is_gone_is_forgotten(setup: Setup) -> None:
    setup.add_group(min_member=1)
    del setup.writer.groups[("team", "gang")]

    await setup.keeper.tick()
    setup.keeper.census.observe("ADDED", raw_pod("a", phase="Running"))
    await setup.keeper.tick()

    assert len(setup.writer.patches) == 1


async def test_a_deleted_group_is_not_written(setup: Setup) -> None:
    setup.add_group(min_member=1)
    setup.keeper.observe_group("DELETED", raw_pod_group())

    await setup.keeper.tick()

    assert setup.writer.patches == []


async def test_a_group_left_alone_by_the_48_hour_rule_warns_once(setup: Setup) -> None:
    setup.add_group(
        min_member=2,
        status={"phase": "Pending", "scheduleStartTime": "2026-11-04T00:00:00Z"},
        created="2026-11-01T00:00:00Z",
    )
    setup.keeper.census.observe("ADDED", raw_pod("a"))
    setup.keeper.census.observe("ADDED", raw_pod("b"))
    await setup.keeper.tick()
    setup.keeper.census.observe("MODIFIED", raw_pod("a", node="n1"))
    await setup.keeper.tick()

    assert setup.writer.patches == []
    assert [(e.type, e.reason, e.note) for e in setup.events.events] == [
        ("Warning", "Timeout", "schedule time longer than 48 hours")
    ]


async def test_an_unreadable_group_is_ignored_with_a_warning(setup: Setup) -> None:
    setup.add_group(min_member=1)
    broken = raw_pod_group(min_member=-1)

    setup.keeper.observe_group("MODIFIED", broken)
    await setup.keeper.tick()

    assert setup.writer.patches == []


async def test_run_passes_every_interval_until_stopped(setup: Setup) -> None:
    setup.add_group(min_member=1)
    stop = asyncio.Event()
    task = asyncio.create_task(setup.keeper.run(stop))
    while not setup.writer.patches:
        await asyncio.sleep(0)
    setup.keeper.census.observe("ADDED", raw_pod("a", phase="Running"))
    while len(setup.writer.patches) < 2:
        await asyncio.sleep(0)

    stop.set()
    await asyncio.wait_for(task, 1.0)

    assert setup.stored_status()["phase"] == "Running"
    assert set(setup.clock.sleeps) == {1.0}
