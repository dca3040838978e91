"""Coscheduling's extension points on a real framework: queue order, PreFilter's gates, Permit
holding members until the group is complete, and the rejections that free a failed group."""

from __future__ import annotations

import asyncio
import functools
from typing import Any

import pytest

from kopf_scheduler.framework.args import InvalidArgsError
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import ActionType, EventResource, QueueingHint
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.framework.types import NodeToStatus, PostFilterResult, QueuedPodInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.plugins.coscheduling import CoschedulingArgs
from kopf_scheduler.plugins.coscheduling.gang_preemption import GangPreemption
from kopf_scheduler.preemption.gang_planner import PLANNING
from tests.builders import make_node, make_pod, node_info
from tests.plugins.coscheduling.support import Gang, member, pod_group_obj


def _nodes(count: int = 2, cpu: str = "4") -> list[Any]:
    return [
        node_info(make_node(f"n{i}").capacity(cpu=cpu, memory="8Gi", pods=10))
        for i in range(1, count + 1)
    ]


def _run_pre_filter(gang: Gang, pod: Pod) -> Status:
    _, status, _ = gang.framework.run_pre_filter(CycleState(), pod, gang.snapshot.node_info_list)
    return status


# Args ------------------------------------------------------------------------------------------


def test_args_default_and_validate() -> None:
    assert CoschedulingArgs.parse(None) == CoschedulingArgs(60, 0)
    assert CoschedulingArgs.parse({"permitWaitingTimeSeconds": 5, "podGroupBackoffSeconds": 9}) == (
        CoschedulingArgs(5, 9)
    )
    with pytest.raises(InvalidArgsError, match=r"args.podGroupBackoffSeconds: must be at least 0"):
        CoschedulingArgs.parse({"podGroupBackoffSeconds": -1})
    with pytest.raises(InvalidArgsError, match=r"args.kubeMaster: unknown field"):
        CoschedulingArgs.parse({"kubeMaster": "x"})
    assert CoschedulingArgs.parse(None).gang_preemption is True
    assert CoschedulingArgs.parse({"gangPreemption": False}).gang_preemption is False
    with pytest.raises(InvalidArgsError, match=r"args.gangPreemption: must be true or false"):
        CoschedulingArgs.parse({"gangPreemption": "yes"})


def test_gang_preemption_is_built_by_default_and_can_be_switched_off() -> None:
    assert isinstance(Gang(_nodes()).plugin._gang_preemptor, GangPreemption)
    assert Gang(_nodes(), args={"gangPreemption": False}).plugin._gang_preemptor is None


# QueueSort -------------------------------------------------------------------------------------


def test_queue_sort_keeps_a_group_together_by_its_creation_time() -> None:
    gang = Gang(_nodes())
    gang.add_group(pod_group_obj("old", 2, created="2026-01-01T00:00:00Z"))
    late_group = gang.add_group(pod_group_obj("new", 2, created="2026-01-01T01:00:00Z"))
    plain_early = QueuedPodInfo(make_pod("plain-early").pod(), 10.0, initial_attempt_timestamp=0.0)
    plain_late = QueuedPodInfo(make_pod("plain-late").pod(), 10.0)
    plain_late.initial_attempt_timestamp = late_group.creation_timestamp + 1
    infos = [
        QueuedPodInfo(member("b", "new").pod(), 1.0),
        plain_late,
        QueuedPodInfo(member("z", "old").pod(), 5.0),
        QueuedPodInfo(member("a", "new").pod(), 2.0),
        plain_early,
        QueuedPodInfo(member("y", "old").priority(5).pod(), 9.0),
        QueuedPodInfo(member("c", "old").pod(), 3.0),
    ]
    order = sorted(infos, key=_sort_key(gang.plugin.less))
    assert [info.pod.name for info in order] == [
        "y",  # higher priority first
        "plain-early",  # first attempt before every group was created
        "c",  # the older group, members by name
        "z",
        "a",  # the newer group
        "b",
        "plain-late",
    ]


def _sort_key(less: Any) -> Any:
    return functools.cmp_to_key(lambda a, b: -1 if less(a, b) else (1 if less(b, a) else 0))


# PreFilter -------------------------------------------------------------------------------------


def test_pre_filter_lets_pods_of_no_group_through() -> None:
    assert _run_pre_filter(Gang(_nodes()), make_pod("p").pod()).code == Code.SUCCESS


def test_a_member_of_a_missing_group_passes_pre_filter_and_is_rejected_at_permit() -> None:
    # As scheduler-plugins: PreFilter lets it through, so that its PostFilter (preemption)
    # still runs when it finds no node, and Permit turns it away.
    gang = Gang(_nodes())
    pod = member("p", "ghost").pod()
    assert _run_pre_filter(gang, pod).code == Code.SUCCESS
    status = gang.framework.run_permit(CycleState(), pod, "n1")
    assert (status.code, status.message(), status.plugin) == (
        Code.UNSCHEDULABLE,
        "PodGroup not found",
        "Coscheduling",
    )


def test_post_filter_names_a_missing_group_as_upstream_does() -> None:
    gang = Gang(_nodes())
    _, status = gang.plugin.post_filter(CycleState(), member("p", "ghost").pod(), NodeToStatus())
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, "can not find pod group")
    # A pod of no group gets no word from it (a deliberate difference: docs/behaviour.md).
    _, status = gang.plugin.post_filter(CycleState(), make_pod("lone").pod(), NodeToStatus())
    assert (status.code, status.message()) == (Code.UNSCHEDULABLE, "")


def test_pre_filter_waits_for_min_member_pods() -> None:
    gang = Gang(_nodes())
    gang.add_group(pod_group_obj("g", 3))
    pods = [member(f"p{i}", "g").pod() for i in range(2)]
    gang.add_pods(*pods)
    status = _run_pre_filter(gang, pods[0])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert status.message() == (
        "pre-filter pod p0 cannot find enough sibling pods, "
        "current pods number: 2, minMember of group: 3"
    )
    third = member("p2", "g").pod()
    gang.add_pods(third)
    assert _run_pre_filter(gang, pods[0]).code == Code.SUCCESS


def test_pre_filter_checks_min_resources_against_free_capacity() -> None:
    gang = Gang(_nodes(2, cpu="4"))
    info = gang.snapshot.node_info_list[0]
    info.add_pod(make_pod("busy").req(cpu="3").node("n1").pod())
    gang.add_group(pod_group_obj("big", 2, minResources={"cpu": "6"}))
    gang.add_group(pod_group_obj("fits", 2, minResources={"cpu": "5"}))
    big = [member(f"b{i}", "big").pod() for i in range(2)]
    fits = [member(f"f{i}", "fits").pod() for i in range(2)]
    gang.add_pods(*big, *fits)
    status = _run_pre_filter(gang, big[0])
    assert status.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    # scheduler-plugins' words: Go's print of the missing ResourceList (n1 offers 1 CPU, n2 4).
    assert status.message() == "resource gap: map[cpu:{{1000 -3} {<nil>}  DecimalSI}]"
    assert _run_pre_filter(gang, fits[0]).code == Code.SUCCESS


def test_pre_filter_leaves_the_free_capacity_to_a_gang_preemption_plan() -> None:
    gang = Gang(_nodes(2, cpu="4"))
    gang.add_group(pod_group_obj("big", 2, minResources={"cpu": "100"}))
    pods = [member(f"b{i}", "big").pod() for i in range(2)]
    gang.add_pods(*pods)
    assert _run_pre_filter(gang, pods[0]).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    planning = CycleState()
    planning.write(PLANNING, True)
    _, status, _ = gang.framework.run_pre_filter(planning, pods[0], gang.snapshot.node_info_list)
    assert status.code == Code.SUCCESS


def test_pre_filter_counts_the_groups_own_placed_members_as_room() -> None:
    gang = Gang(_nodes(1, cpu="4"))
    gang.add_group(pod_group_obj("g", 3, minResources={"cpu": "3"}))
    pods = [member(f"p{i}", "g").req(cpu="1").pod() for i in range(3)]
    gang.add_pods(*pods)
    gang.place(pods[0], "n1")
    gang.snapshot.node_info_list[0].add_pod(make_pod("other").req(cpu="1").node("n1").pod())
    assert _run_pre_filter(gang, pods[1]).code == Code.SUCCESS


def test_pre_filter_skips_its_checks_once_the_group_is_placed() -> None:
    gang = Gang(_nodes())
    gang.add_group(pod_group_obj("g", 2, minResources={"cpu": "100"}))
    pods = [member(f"p{i}", "g").pod() for i in range(2)]
    gang.add_pods(*pods)
    assert _run_pre_filter(gang, pods[0]).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    gang.place(pods[0], "n1")
    gang.place(pods[1], "n2")
    extra = member("p9", "g").pod()
    gang.add_pods(extra)
    assert _run_pre_filter(gang, extra).code == Code.SUCCESS


# Permit, through the framework and its waiting pods ----------------------------------------------


class _Timer:
    """A sleep that ends only when the test fires it (a Permit timeout)."""

    def __init__(self) -> None:
        self.fired = asyncio.Event()
        self.waits: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        await self.fired.wait()


async def _permit(
    framework: Framework, gang: Gang, pod: Pod, node: str, timer: _Timer
) -> tuple[Status, asyncio.Task[Status]]:
    """Permit as the scheduling cycle runs it, then the binding cycle's wait on it."""
    status = framework.run_permit(CycleState(), pod, node)
    gang.place(pod, node)
    task = asyncio.ensure_future(framework.wait_on_permit(pod, timer.sleep))
    for _ in range(3):  # the wait starts, then its timer
        await asyncio.sleep(0)
    return status, task


async def test_permit_holds_members_until_min_member_then_allows_all() -> None:
    gang = Gang(_nodes(3))
    gang.add_group(pod_group_obj("g", 3))
    pods = [member(f"p{i}", "g").pod() for i in range(3)]
    gang.add_pods(pods[0], pods[1])
    assert _run_pre_filter(gang, pods[1]).code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    gang.add_pods(pods[2])
    timer = _Timer()
    first, first_wait = await _permit(gang.framework, gang, pods[0], "n1", timer)
    second, second_wait = await _permit(gang.framework, gang, pods[1], "n2", timer)
    assert (first.code, second.code) == (Code.WAIT, Code.WAIT)
    assert timer.waits == [60, 60]
    assert [w.pod.name for w in gang.framework.waiting_pods()] == ["p0", "p1"]
    assert not first_wait.done() and not second_wait.done()
    # The first member's wait activated the sibling PreFilter turned away, and only it: the
    # others are in the queue already, or wait for their back-off after a failed attempt.
    assert [pod.name for pod in gang.activated] == ["p1"]

    third, third_wait = await _permit(gang.framework, gang, pods[2], "n3", timer)

    assert third.code == Code.SUCCESS
    results = await asyncio.gather(first_wait, second_wait, third_wait)
    assert [status.code for status in results] == [Code.SUCCESS] * 3
    assert gang.framework.waiting_pods() == []


async def test_permit_timeout_rejects_and_unreserve_frees_every_member_without_a_back_off() -> None:
    gang = Gang(_nodes(3), args={"podGroupBackoffSeconds": 30})
    gang.add_group(pod_group_obj("g", 3, scheduleTimeoutSeconds=7))
    pods = [member(f"p{i}", "g").pod() for i in range(3)]
    gang.add_pods(*pods)
    first_timer, second_timer = _Timer(), _Timer()
    _, first_wait = await _permit(gang.framework, gang, pods[0], "n1", first_timer)
    _, second_wait = await _permit(gang.framework, gang, pods[1], "n2", second_timer)
    assert first_timer.waits == [7]

    first_timer.fired.set()
    timed_out = await first_wait
    assert timed_out.code == Code.UNSCHEDULABLE
    assert timed_out.message() == "rejected due to timeout after waiting 7s at plugin Coscheduling"
    assert not second_wait.done()
    # The binding cycle unreserves the pod that timed out: its siblings lose their places too.
    gang.framework.run_unreserve(CycleState(), pods[0], "n1")
    rejected = await second_wait
    assert (rejected.code, rejected.plugin) == (Code.UNSCHEDULABLE, "Coscheduling")
    assert rejected.message() == "rejection in Unreserve"
    # As upstream, only PostFilter starts a back-off: the group may try again at once.
    assert _run_pre_filter(gang, pods[2]).code == Code.SUCCESS


async def test_unreserve_of_one_member_leaves_other_groups_waiting() -> None:
    gang = Gang(_nodes(4))
    gang.add_group(pod_group_obj("a", 3))
    gang.add_group(pod_group_obj("b", 2, namespace="other"))
    a_pods = [member(f"a{i}", "a").pod() for i in range(3)]
    b_pod = member("a0", "b", namespace="other").pod()
    gang.add_pods(*a_pods, b_pod)
    timer = _Timer()
    _, a0 = await _permit(gang.framework, gang, a_pods[0], "n1", timer)
    _, a1 = await _permit(gang.framework, gang, a_pods[1], "n2", timer)
    _, b0 = await _permit(gang.framework, gang, b_pod, "n3", timer)

    gang.framework.run_unreserve(CycleState(), a_pods[1], "n2")

    assert (await a0).message() == "rejection in Unreserve"
    assert not b0.done()
    assert [w.pod.key for w in gang.framework.waiting_pods()] == ["other/a0"]
    b0.cancel()
    a1.cancel()


# PostFilter ------------------------------------------------------------------------------------


async def test_post_filter_rejects_the_waiting_members_of_a_short_group() -> None:
    gang = Gang(_nodes(2), args={"podGroupBackoffSeconds": 10, "gangPreemption": False})
    gang.add_group(pod_group_obj("g", 3))
    pods = [member(f"p{i}", "g").pod() for i in range(3)]
    gang.add_pods(*pods)
    timer = _Timer()
    _, first_wait = await _permit(gang.framework, gang, pods[0], "n1", timer)
    _, second_wait = await _permit(gang.framework, gang, pods[1], "n2", timer)

    _, status = gang.framework.run_post_filter(CycleState(), pods[2], {})

    assert (status.code, status.plugin) == (Code.UNSCHEDULABLE, "Coscheduling")
    assert status.message() == (
        "PodGroup default/g gets rejected due to Pod p2 is unschedulable even after PostFilter"
    )
    for wait in (first_wait, second_wait):
        rejected = await wait
        assert (rejected.code, rejected.message()) == (
            Code.UNSCHEDULABLE,
            "optimistic rejection in PostFilter",
        )
    assert _run_pre_filter(gang, pods[2]).message() == "podGroup default/g failed recently"


async def test_post_filter_leaves_a_complete_group_alone() -> None:
    gang = Gang(_nodes(2))
    gang.add_group(pod_group_obj("g", 2))
    pods = [member(f"p{i}", "g").pod() for i in range(3)]
    gang.add_pods(*pods)
    gang.place(pods[0], "n1")
    gang.place(pods[1], "n2")
    _, status = gang.framework.run_post_filter(CycleState(), pods[2], {})
    assert status.code == Code.UNSCHEDULABLE
    assert "gets rejected" not in status.message()


class _Preemptor:
    def __init__(self, answer: Status | None) -> None:
        self.answer = answer
        self.calls: list[tuple[str, str]] = []

    def preempt_for_group(
        self, framework: Framework, state: CycleState, pod: Pod, group_key: str
    ) -> tuple[PostFilterResult | None, Status] | None:
        self.calls.append((pod.name, group_key))
        return None if self.answer is None else (None, self.answer)


async def test_post_filter_asks_the_gang_preemptor_first() -> None:
    handled = _Preemptor(Status(Code.UNSCHEDULABLE, "victims chosen for the group"))
    gang = Gang(_nodes(2), gang_preemptor=handled)
    gang.add_group(pod_group_obj("g", 3))
    pods = [member(f"p{i}", "g").pod() for i in range(3)]
    gang.add_pods(*pods)
    _, first_wait = await _permit(gang.framework, gang, pods[0], "n1", _Timer())

    _, status = gang.framework.run_post_filter(CycleState(), pods[2], {})

    assert handled.calls == [("p2", "default/g")]
    assert status.message() == "victims chosen for the group"
    assert not first_wait.done()

    gang.plugin._gang_preemptor = _Preemptor(None)
    _, status = gang.framework.run_post_filter(CycleState(), pods[2], {})
    assert "gets rejected" in status.message()
    assert (await first_wait).message() == "optimistic rejection in PostFilter"


# Requeueing ------------------------------------------------------------------------------------


def test_queueing_hints_requeue_only_the_groups_own_pods() -> None:
    gang = Gang(_nodes())
    events = {
        registration.event.resource: registration
        for registration in gang.plugin.events_to_register()
    }
    rejected = member("p0", "g").pod()
    pod_added = events[EventResource.POD]
    assert pod_added.event.action == ActionType.ADD
    assert pod_added.hint is not None
    assert pod_added.hint(rejected, None, member("p1", "g").pod()) == QueueingHint.QUEUE
    assert pod_added.hint(rejected, None, member("p1", "h").pod()) == QueueingHint.QUEUE_SKIP
    group_changed = events[EventResource.POD_GROUP]
    assert group_changed.hint is not None
    assert group_changed.hint(rejected, None, PodGroup(pod_group_obj("g", 1))) == QueueingHint.QUEUE
    other = PodGroup(pod_group_obj("g", 1, namespace="x"))
    assert group_changed.hint(rejected, None, other) == QueueingHint.QUEUE_SKIP
    assert events[EventResource.NODE].event.action & ActionType.ADD
    # Room given back by another pod helps; room the group's own members give back does not.
    deleted = events[EventResource.ASSIGNED_POD]
    assert deleted.event.action == ActionType.DELETE
    assert deleted.hint is not None
    assert deleted.hint(rejected, make_pod("other").pod(), None) == QueueingHint.QUEUE
    assert deleted.hint(rejected, member("p9", "h").pod(), None) == QueueingHint.QUEUE
    assert deleted.hint(rejected, member("p1", "g").pod(), None) == QueueingHint.QUEUE_SKIP


async def test_a_zero_schedule_timeout_falls_back_to_the_permit_waiting_time() -> None:
    gang = Gang(_nodes(3), args={"permitWaitingTimeSeconds": 45})
    gang.add_group(pod_group_obj("g", 2, scheduleTimeoutSeconds=0))
    pods = [member(f"p{i}", "g").pod() for i in range(2)]
    gang.add_pods(*pods)
    timer = _Timer()
    status, wait = await _permit(gang.framework, gang, pods[0], "n1", timer)
    assert status.code == Code.WAIT
    assert timer.waits == [45]
    wait.cancel()


def test_the_resource_gap_reads_as_upstream_prints_it() -> None:
    # The figures of a run of scheduler-plugins' own arithmetic: minResources cpu 2, memory
    # 4Gi and minMember 3 against one node offering 500m, 1Gi and one pod.
    gang = Gang([node_info(make_node("n1").capacity(cpu="500m", memory="1Gi", pods=1))])
    gang.add_group(pod_group_obj("g", 3, minResources={"cpu": "2", "memory": "4Gi"}))
    pods = [member(f"p{i}", "g").pod() for i in range(3)]
    gang.add_pods(*pods)
    assert _run_pre_filter(gang, pods[0]).message() == (
        "resource gap: map[cpu:{{1500 -3} {<nil>}  DecimalSI} "
        "memory:{{3221225472 0} {<nil>}  BinarySI} pods:{{2 0} {<nil>}  DecimalSI}]"
    )
