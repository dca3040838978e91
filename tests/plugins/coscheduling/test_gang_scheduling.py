"""Gang scheduling end to end: the whole scheduler on the in-memory cluster, with a profile that
enables Coscheduling as the shipped configuration does."""

from __future__ import annotations

from typing import Any

from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.informer.handlers import ADDED
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod
from tests.plugins.coscheduling.support import coscheduling_config, member, pod_group_obj

SCHED = "kopf-scheduler"


def _config() -> SchedulerConfig:
    return coscheduling_config(SCHED, permitWaitingTimeSeconds=10, podGroupBackoffSeconds=30)


async def _schedule_gang(nodes: int) -> tuple[Simulation, dict[str, Any]]:
    # Without a group back-off, a group that cannot fit would be retried at once for ever (the
    # queue pops backed-off pods when nothing else is active), as upstream.
    sim = Simulation(_config(), max_virtual_seconds=600)
    sim.start()
    assert sim.handlers is not None
    sim.handlers.route("PodGroup")(ADDED, pod_group_obj("train", 3))
    for index in range(nodes):
        sim.apply(make_node(f"n{index}").capacity(cpu="2", memory="4Gi", pods=10).obj())
    for index in range(3):
        sim.apply(member(f"w{index}", "train").scheduler(SCHED).req(cpu="2").obj())
    await sim.run_until_quiet()
    placed = {
        key: raw["spec"].get("nodeName")
        for key, raw in sim.cluster.pods.items()
        if key.startswith("default/w")
    }
    return sim, placed


async def test_a_group_of_three_with_room_for_two_binds_none() -> None:
    sim, placed = await _schedule_gang(nodes=2)
    assert placed == {"default/w0": None, "default/w1": None, "default/w2": None}
    assert sim.scheduler is not None
    assert sim.scheduler.cache.assumed_pods() == []
    reasons = {
        condition["message"]
        for raw in sim.cluster.pods.values()
        for condition in raw["status"].get("conditions", [])
        if condition["type"] == "PodScheduled"
    }
    assert any("PodGroup default/train gets rejected" in reason for reason in reasons), reasons

    sim.apply(make_node("n9").capacity(cpu="2", memory="4Gi", pods=10).obj())
    await sim.run_until_quiet()
    assert all(sim.cluster.pods[f"default/w{index}"]["spec"].get("nodeName") for index in range(3))


async def test_a_group_of_three_with_room_for_three_binds_all() -> None:
    _, placed = await _schedule_gang(nodes=3)
    assert sorted(placed) == ["default/w0", "default/w1", "default/w2"]
    assert sorted(node for node in placed.values() if node) == ["n0", "n1", "n2"]


class _AttemptBudget(list[Any]):
    """The simulation's attempt log, failing the test once a scenario tries more pods than it
    can need (a scheduler retrying a group in a loop never lets virtual time move on)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def append(self, item: Any) -> None:
        super().append(item)
        assert len(self) <= self.limit, [record.pod for record in self[-8:]]


def _config_without_group_backoff() -> SchedulerConfig:
    return coscheduling_config(
        SCHED,
        {"podInitialBackoffSeconds": 1, "podMaxBackoffSeconds": 2},
        permitWaitingTimeSeconds=3,
    )


async def test_a_group_that_cannot_fit_waits_like_any_unschedulable_pod() -> None:
    # Four members, room for three, no group back-off: the group's own reservations given back
    # must not send it round again at once, ahead of every other pod.
    sim = Simulation(_config_without_group_backoff(), max_virtual_seconds=30)
    sim.attempts = _AttemptBudget(limit=40)
    sim.start()
    assert sim.handlers is not None
    sim.handlers.route("PodGroup")(ADDED, pod_group_obj("g", 4))
    for index in range(3):
        sim.apply(make_node(f"n{index}").capacity(cpu="4", memory="8Gi", pods=10).obj())
    for index in range(4):
        sim.apply(member(f"g{index}", "g").scheduler(SCHED).req(cpu="3").obj())
    await sim.run_until_quiet()
    assert len(sim.attempts) <= 8, [record.pod for record in sim.attempts]

    # A plain pod the size of one member finds the room the group could not use.
    sim.apply(make_pod("plain").scheduler(SCHED).req(cpu="3").obj())
    await sim.run_until_quiet()
    assert sim.cluster.pods["default/plain"]["spec"].get("nodeName")
    assert not any(
        sim.cluster.pods[f"default/g{index}"]["spec"].get("nodeName") for index in range(4)
    )
