"""Gang preemption through Coscheduling's PostFilter: a real profile (NodeResourcesFit,
DefaultPreemption, Coscheduling), a PodGroup store, and API ports that record what they are
asked to do."""

from __future__ import annotations

from collections.abc import Coroutine
from typing import Any

from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.runtime import Framework, ProfilePlugins
from kopf_scheduler.framework.status import Code
from kopf_scheduler.framework.types import NodeToStatus, NominatingInfo, NominatingMode
from kopf_scheduler.informer.pod_groups import PodGroupStore
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.plugins import coscheduling, node_resources_fit
from kopf_scheduler.plugins.coscheduling.gang_preemption import (
    WAITING_FOR_VICTIMS,
    GangPreemption,
)
from kopf_scheduler.plugins.default_preemption import (
    METRIC_PREEMPTION_ATTEMPTS,
    DefaultPreemption,
)
from tests.builders import make_node, make_pod, node_info
from tests.plugins.coscheduling.support import member, pod_group_obj
from tests.preemption.support import (
    FakeDeleter,
    FakeMetrics,
    FakeNominator,
    FakeRecorder,
    FakeStatusWriter,
)

LOW, HIGH = 10, 100


class RecordingNominator(FakeNominator):
    def __init__(self) -> None:
        super().__init__()
        self.nominations: dict[str, str] = {}

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None:
        if info is not None and info.mode is NominatingMode.OVERRIDE:
            self.nominations[pod.key] = info.nominated_node_name


class Cluster:
    """Nodes of 4 CPUs, each full with two low-priority pods of 2 CPUs, and a profile with
    Coscheduling after DefaultPreemption (as the shipped configuration orders them)."""

    def __init__(self, nodes: int, *, args: dict[str, Any] | None = None) -> None:
        self.store: dict[str, Pod] = {}
        infos = []
        for index in range(1, nodes + 1):
            name = f"n{index}"
            pods = [
                make_pod(f"low-{index}-{slot}")
                .uid(f"low-{index}-{slot}")
                .priority(LOW)
                .req(cpu="2")
                .node(name)
                .pod()
                for slot in range(2)
            ]
            infos.append(node_info(make_node(name).capacity(cpu="4", memory="8Gi", pods=10), *pods))
            for pod in pods:
                self.store[pod.key] = pod
        self.groups = PodGroupStore()
        self.writer = FakeStatusWriter()
        self.deleter = FakeDeleter(self.store)
        self.recorder = FakeRecorder()
        self.metrics = FakeMetrics()
        self.nominator = RecordingNominator()
        self.spawned: list[Coroutine[Any, Any, None]] = []
        self.activated: list[str] = []
        self.handle = Handle(
            snapshot=Snapshot.from_node_infos(infos),
            nominator=self.nominator,
            now=lambda: 1_800_000_000.0,
            metrics=self.metrics,
            scheduler_name="kopf-scheduler",
            get_pod=self.store.get,
            status_writer=self.writer,
            pod_deleter=self.deleter,
            event_recorder=self.recorder,
            spawn=self.spawned.append,
            activate=lambda pods: self.activated.extend(pod.key for pod in pods),
            pod_groups=self.groups,
        )
        fit = node_resources_fit.new(None, self.handle)
        preemption = DefaultPreemption(self.handle)
        self.plugin = coscheduling.new(args, self.handle)
        self.framework = Framework(
            "kopf-scheduler",
            ProfilePlugins(
                queue_sort=self.plugin,
                pre_filter=[fit, self.plugin],
                filter=[fit],
                post_filter=[preemption, self.plugin],
                reserve=[self.plugin],
                permit=[self.plugin],
                all=[fit, preemption, self.plugin],
            ),
            self.handle,
        )

    def gang(
        self, name: str, min_member: int, count: int, cpu: str = "2", **spec: Any
    ) -> list[Pod]:
        group = PodGroup(pod_group_obj(name, min_member, **spec))
        self.groups.groups[group.key] = group
        pods = [
            member(f"{name}-{index}", name).uid(f"{name}-{index}").priority(HIGH).req(cpu=cpu).pod()
            for index in range(count)
        ]
        for pod in pods:
            self.store[pod.key] = pod
            self.groups.pod_changed(None, pod)
        return pods

    def attempt(self, pod: Pod) -> tuple[Any, Any]:
        """PreFilter, Filter on every node (unless PreFilter rejected the pod), then PostFilter,
        as a failed scheduling cycle."""
        state = CycleState()
        nodes = self.handle.snapshot.node_info_list
        _, status, _ = self.framework.run_pre_filter(state, pod, nodes)
        statuses = NodeToStatus()
        if status.is_success():
            for info in nodes:
                statuses.set(info.name, self.framework.run_filter_plugins(state, pod, info))
        else:
            statuses.absent = status
        return self.framework.run_post_filter(state, pod, statuses)

    async def run_spawned(self) -> None:
        while self.spawned:
            await self.spawned.pop(0)


async def test_one_member_preempts_for_the_whole_group_and_nominates_every_member() -> None:
    cluster = Cluster(3)
    first, second = cluster.gang("train", 2, 2)

    result, status = cluster.attempt(first)

    assert status.is_success(), status
    assert result is not None
    own_node = result.nominating_info.nominated_node_name
    others_node = cluster.nominator.nominations["default/train-1"]
    # DefaultPreemption left the member to its group.
    assert cluster.metrics.count(METRIC_PREEMPTION_ATTEMPTS) == 0
    await cluster.run_spawned()
    # Two victims, one for each member, each on the node its member goes to.
    assert len(cluster.deleter.deleted) == 2, cluster.deleter.deleted
    victim_nodes = sorted(key.split("-")[1] for key in cluster.deleter.deleted)
    assert victim_nodes == sorted(node[1:] for node in (own_node, others_node))
    for key in cluster.deleter.deleted:
        conditions = [body for target, body in cluster.writer.patches if target == key]
        assert "PreemptionByScheduler" in str(conditions), conditions
    assert [event.reason for event in cluster.recorder.events] == ["Preempted", "Preempted"]
    nominated = [body for target, body in cluster.writer.patches if target == second.key]
    assert nominated == [{"status": {"nominatedNodeName": others_node}}], nominated


async def test_a_failed_eviction_sends_the_other_members_back_to_the_active_queue() -> None:
    cluster = Cluster(3)
    first, second = cluster.gang("train", 2, 2)
    for key in list(cluster.store):
        if key.startswith("default/low-"):
            cluster.deleter.fail[key] = RuntimeError("the API server is gone")

    _, status = cluster.attempt(first)
    assert status.is_success()
    await cluster.run_spawned()

    assert cluster.deleter.deleted == []
    assert cluster.activated == [second.key]


async def test_a_plan_is_made_for_a_group_whose_min_resources_the_full_cluster_lacks() -> None:
    cluster = Cluster(3)
    first, _ = cluster.gang("train", 2, 2, minResources={"cpu": "4"})
    _, turned_away, _ = cluster.framework.run_pre_filter(
        CycleState(), first, cluster.handle.snapshot.node_info_list
    )
    assert turned_away.message().startswith("resource gap: ")

    result, status = cluster.attempt(first)

    assert status.is_success(), status
    assert result is not None
    await cluster.run_spawned()
    assert len(cluster.deleter.deleted) == 2, cluster.deleter.deleted


async def test_a_group_that_cannot_be_completed_evicts_nothing() -> None:
    cluster = Cluster(2)
    # Three members of 4 CPUs each, two nodes: no eviction completes the group.
    pods = cluster.gang("big", 3, 3, cpu="4")

    _, status = cluster.attempt(pods[0])

    assert status.code == Code.UNSCHEDULABLE
    assert "PodGroup default/big gets rejected" in status.message()
    assert not cluster.spawned
    assert cluster.deleter.deleted == []
    assert cluster.nominator.nominations == {}


async def test_members_wait_for_the_victims_of_their_group_instead_of_preempting_again() -> None:
    cluster = Cluster(3)
    first, second = cluster.gang("train", 2, 2)
    _, status = cluster.attempt(first)
    assert status.is_success()
    await cluster.run_spawned()
    victims = list(cluster.deleter.deleted)
    # What the watch shows next: the victims terminating, marked by the scheduler.
    for key in victims:
        name = key.split("/", 1)[1]
        node = cluster.handle.snapshot.get(f"n{name.split('-')[1]}")
        assert node is not None
        gone = next(pod for pod in node.pods if pod.key == key)
        node.remove_pod(gone)
        node.add_pod(
            make_pod(name)
            .uid(name)
            .priority(LOW)
            .req(cpu="2")
            .node(node.name)
            .terminating()
            .condition("DisruptionTarget", "True", "PreemptionByScheduler")
            .pod()
        )
    deleted = len(cluster.deleter.deleted)

    _, again = cluster.attempt(second)

    assert (again.code, again.message()) == (Code.UNSCHEDULABLE, WAITING_FOR_VICTIMS)
    assert not cluster.spawned
    assert len(cluster.deleter.deleted) == deleted


def test_switched_off_the_members_preempt_one_by_one() -> None:
    cluster = Cluster(3, args={"gangPreemption": False})
    first, _ = cluster.gang("train", 2, 2)

    result, status = cluster.attempt(first)

    assert cluster.metrics.count(METRIC_PREEMPTION_ATTEMPTS) == 1
    assert status.is_success()
    assert result is not None
    assert cluster.nominator.nominations == {}
    for coroutine in cluster.spawned:
        coroutine.close()


async def test_the_plans_of_deleted_groups_are_forgotten() -> None:
    """A long-running scheduler sees job after job; the last plan of a group whose PodGroup is
    gone is dropped the next time any group preempts."""
    cluster = Cluster(4)
    first, _ = cluster.gang("old", 2, 2)
    cluster.attempt(first)
    await cluster.run_spawned()
    preemptor = cluster.plugin._gang_preemptor
    assert isinstance(preemptor, GangPreemption)
    assert "default/old" in preemptor._planned
    del cluster.groups.groups["default/old"]
    later, _ = cluster.gang("new", 2, 2)

    cluster.attempt(later)
    await cluster.run_spawned()

    assert "default/old" not in preemptor._planned
    assert "default/new" in preemptor._planned
