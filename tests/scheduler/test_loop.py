"""The scheduling loop end to end on the in-memory cluster: what a user would see."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from kopf_scheduler.config.loader import default_config, parse_config
from kopf_scheduler.framework.status import Code, Status
from kopf_scheduler.k8s.errors import TransportError
from kopf_scheduler.ports import ApiError, PodRef, PodStatusPatch
from kopf_scheduler.scheduler.algorithm import SchedulingError
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pdb, make_pod

SCHED = "kopf-scheduler"


def pod(name: str, **requests: str) -> Any:
    return make_pod(name).scheduler(SCHED).req(**requests)


def conditions(sim: Simulation, key: str) -> dict[str, dict[str, Any]]:
    raw = sim.cluster.pods[key]
    return {c["type"]: c for c in raw["status"].get("conditions", [])}


def events(sim: Simulation, reason: str | None = None) -> list[tuple[str, str, str]]:
    return [
        (e.reason, e.object, e.message)
        for e in sim.cluster.events
        if reason is None or e.reason == reason
    ]


async def test_binds_and_reports_scheduled() -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").obj())
    sim.apply(pod("p", cpu="1").obj())
    await sim.run_until_quiet()
    assert sim.cluster.pods["default/p"]["spec"]["nodeName"] == "n1"
    assert events(sim) == [("Scheduled", "default/p", "Successfully assigned default/p to n1")]
    assert sim.cluster.events[0].reporting_controller == SCHED
    assert sim.cluster.events[0].type == "Normal"


async def test_unschedulable_pod_gets_condition_and_event_then_binds_when_a_node_appears() -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="3", memory="1Gi", pods=10).obj())
    sim.apply(make_pod("equal").req(cpu="2").node("n1").obj())
    sim.apply(
        make_node("n2").capacity(cpu="4", memory="1Gi", pods=10).taint("dedicated", "x").obj()
    )
    sim.apply(pod("big", cpu="2").obj())
    await sim.run_until_quiet()
    message = (
        "0/2 nodes are available: 1 Insufficient cpu, 1 node(s) had untolerated taint(s). "
        "no new claims to deallocate, "
        "preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, "
        "1 Preemption is not helpful for scheduling."
    )
    condition = conditions(sim, "default/big")["PodScheduled"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        message,
    )
    assert events(sim, "FailedScheduling")[0] == ("FailedScheduling", "default/big", message)
    sim.apply(make_node("n3").capacity(cpu="4", memory="8Gi", pods=10).obj())
    await sim.run_until_quiet()
    assert sim.cluster.pods["default/big"]["spec"]["nodeName"] == "n3"
    assert conditions(sim, "default/big")["PodScheduled"]["status"] == "True"


async def test_higher_priority_pod_gets_the_only_slot() -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="1", memory="1Gi", pods=10).obj())
    sim.apply(pod("low", cpu="1").priority(1).preemption_policy("Never").obj())
    sim.apply(pod("high", cpu="1").priority(100).preemption_policy("Never").obj())
    await sim.run_until_quiet()
    assert sim.cluster.pods["default/high"]["spec"].get("nodeName") == "n1"
    assert not sim.cluster.pods["default/low"]["spec"].get("nodeName")


async def test_pods_of_other_schedulers_are_never_touched() -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").obj())
    sim.apply(make_pod("theirs").scheduler("default-scheduler").obj())
    sim.apply(make_pod("unnamed").obj())
    await sim.run_until_quiet()
    for key in ("default/theirs", "default/unnamed"):
        raw = sim.cluster.pods[key]
        assert not raw["spec"].get("nodeName")
        assert "conditions" not in raw["status"]
    assert events(sim) == []


async def test_malformed_pod_is_reported_and_others_still_schedule() -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").obj())
    bad = pod("bad").obj()
    bad["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "two"}}
    sim.apply(bad)
    sim.apply(pod("good", cpu="1").obj())
    await sim.run_until_quiet()
    message = (
        "invalid pod: spec.containers[0].resources.requests.cpu: quantities must match the "
        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$', got 'two'"
    )
    condition = conditions(sim, "default/bad")["PodScheduled"]
    assert (condition["status"], condition["reason"], condition["message"]) == (
        "False",
        "Unschedulable",
        message,
    )
    assert ("FailedScheduling", "default/bad", message) in events(sim)
    assert sim.cluster.pods["default/good"]["spec"]["nodeName"] == "n1"


async def test_preemption_deletes_victims_then_binds_preemptor() -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="2", memory="4Gi", pods=10).obj())
    sim.apply(make_pod("victim").req(cpu="2").priority(1).node("n1").grace(7).obj())
    preemptor = sim.apply(pod("vip", cpu="2").priority(100).obj())
    await sim.run_until_quiet()
    victim = sim.cluster.deleted["default/victim"]
    target = {c["type"]: c for c in victim["status"]["conditions"]}["DisruptionTarget"]
    assert (target["status"], target["reason"], target["message"]) == (
        "True",
        "PreemptionByScheduler",
        "kopf-scheduler: preempting to accommodate a higher priority pod",
    )
    assert (
        "Preempted",
        "default/victim",
        f"Preempted by pod {preemptor['metadata']['uid']} on node n1",
    ) in events(sim)
    scheduled = [e for e in sim.cluster.events if e.reason == "Scheduled"]
    assert [(e.object, e.message) for e in scheduled] == [
        ("default/vip", "Successfully assigned default/vip to n1")
    ]
    assert scheduled[0].time - sim.started >= 7  # bound only after the victim's grace period
    assert sim.cluster.pods["default/vip"]["spec"]["nodeName"] == "n1"


async def test_the_preemptors_nomination_is_written_before_its_victims_are_touched() -> None:
    # kube-scheduler patches the failed pod's status in the scheduling goroutine and the
    # preemption goroutine starts after it, so the nomination reaches the API server first and
    # its change can requeue the preemptor before the victim's deletion is seen.
    sim = Simulation(default_config())
    writes: list[str] = []

    def watch(kind: str, event_type: str, raw: Any) -> None:
        if kind == "Pod" and event_type == "MODIFIED":
            status = raw.get("status", {})
            if status.get("nominatedNodeName"):
                writes.append(f"nominated {raw['metadata']['name']}")
            if any(c["type"] == "DisruptionTarget" for c in status.get("conditions", [])):
                writes.append(f"disrupted {raw['metadata']['name']}")

    sim.cluster.subscribe(watch)
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="2", memory="4Gi", pods=10).obj())
    sim.apply(make_pod("victim").req(cpu="2").priority(1).node("n1").grace(7).obj())
    sim.apply(pod("vip", cpu="2").priority(100).obj())
    await sim.run_until_quiet()
    assert writes[:2] == ["nominated vip", "disrupted victim"]


async def test_preemption_prefers_the_node_without_pdb_violation() -> None:
    sim = Simulation(default_config())
    sim.start()
    for name in ("n1", "n2"):
        sim.apply(make_node(name).capacity(cpu="1", memory="4Gi", pods=10).obj())
    sim.apply(
        make_pod("guarded").labels(app="db").req(cpu="1").priority(1).node("n1").grace(0).obj()
    )
    sim.apply(make_pod("plain").req(cpu="1").priority(1).node("n2").grace(0).obj())
    pdb = make_pdb("db", {"app": "db"}, 0).raw
    sim.apply({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", **pdb})
    sim.apply(pod("vip", cpu="1").priority(100).obj())
    await sim.run_until_quiet()
    assert "default/plain" in sim.cluster.deleted
    assert "default/guarded" in sim.cluster.pods
    assert sim.cluster.pods["default/vip"]["spec"]["nodeName"] == "n2"


async def test_nomination_cleared_when_nominated_node_is_deleted() -> None:
    sim = Simulation(default_config())
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="1", memory="4Gi", pods=10).obj())
    sim.apply(make_pod("victim").req(cpu="1").priority(1).node("n1").grace(60).obj())
    sim.apply(pod("vip", cpu="1").priority(100).obj())
    scheduler = sim.start()
    while scheduler.schedule_one():
        pass
    await scheduler.drain()
    assert sim.cluster.pods["default/vip"]["status"].get("nominatedNodeName") == "n1"
    sim.handlers.route("Node")("DELETED", sim.cluster.nodes.pop("n1"))  # type: ignore[union-attr]
    await scheduler.drain()
    assert "nominatedNodeName" not in sim.cluster.pods["default/vip"]["status"]
    assert (
        scheduler.queue.nominator.nominated_node(sim.cluster.pods["default/vip"]["metadata"]["uid"])
        is None
    )
    assert ("default/vip", "n1", "node deleted") in scheduler.nominations.cleared


async def test_hygiene_can_be_switched_off() -> None:
    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "kopfScheduler": {"nominationHygiene": False},
        }
    )
    sim = Simulation(config)
    scheduler = sim.start()
    sim.apply(make_node("n1").capacity(cpu="1", memory="4Gi", pods=10).obj())
    sim.apply(make_pod("victim").req(cpu="1").priority(1).node("n1").grace(60).obj())
    sim.apply(pod("vip", cpu="1").priority(100).obj())
    while scheduler.schedule_one():
        pass
    await scheduler.drain()
    sim.handlers.route("Node")("DELETED", sim.cluster.nodes.pop("n1"))  # type: ignore[union-attr]
    await scheduler.drain()
    assert sim.cluster.pods["default/vip"]["status"].get("nominatedNodeName") == "n1"


async def test_same_seed_same_placements() -> None:
    async def placements(seed: int) -> dict[str, str]:
        sim = Simulation(default_config(), seed=seed)
        sim.start()
        for i in range(6):
            sim.apply(make_node(f"n{i}").obj())
        for i in range(12):
            sim.apply(pod(f"p{i}", cpu="100m").obj())
        await sim.run_until_quiet()
        return {k: v["spec"]["nodeName"] for k, v in sim.cluster.pods.items() if v["kind"] == "Pod"}

    first = await placements(1)
    assert first == await placements(1)
    assert len(set(first.values())) > 1


async def test_the_loop_takes_the_next_pod_only_once_a_failures_status_patch_is_done() -> None:
    """As kube-scheduler's failure handler, which patches the pod before the loop goes on."""
    sim = Simulation(default_config())
    scheduler = sim.start()
    real_writer = sim.cluster.patch_status
    release = asyncio.Event()
    patched: list[str] = []

    class HeldWriter:
        async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
            await release.wait()
            await real_writer(pod, patch)
            patched.append(pod.key)

    sim.cluster.patch_status = HeldWriter().patch_status  # type: ignore[method-assign]
    sim.apply(make_node("n1").capacity(cpu="1", memory="4Gi", pods=10).obj())
    sim.apply(pod("big", cpu="2").priority(10).obj())
    sim.apply(pod("small", cpu="500m").obj())
    stop = asyncio.Event()
    running = asyncio.create_task(scheduler.run(stop))
    for _ in range(200):
        await asyncio.sleep(0)
    assert scheduler.cycle == 1  # "big" failed; its patch is held, so "small" waits
    assert "nodeName" not in sim.cluster.pods["default/small"]["spec"]

    release.set()
    for _ in range(200):
        await asyncio.sleep(0)
    stop.set()
    await running
    await scheduler.drain()
    assert patched == ["default/big"]
    assert conditions(sim, "default/big")["PodScheduled"]["reason"] == "Unschedulable"
    assert sim.cluster.pods["default/small"]["spec"]["nodeName"] == "n1"


async def test_about_one_cycle_in_ten_times_its_plugins() -> None:
    """As upstream's pluginMetricsSamplePercent: per-plugin durations for a sample of cycles."""
    sim = Simulation(default_config())
    scheduler = sim.start()
    choose = scheduler.algorithm.schedule_pod
    sampled: list[bool] = []

    def spy(framework: Any, state: Any, pod: Any, snapshot: Any) -> Any:
        sampled.append(state.record_plugin_metrics)
        return choose(framework, state, pod, snapshot)

    scheduler.algorithm.schedule_pod = spy  # type: ignore[method-assign]
    sim.apply(make_node("n1").capacity(cpu="100", memory="100Gi", pods=500).obj())
    for i in range(300):
        sim.apply(pod(f"p{i}", cpu="10m").obj())
    await sim.run_until_quiet()

    assert len(sampled) == 300
    assert 15 <= sum(sampled) <= 45


async def test_the_loop_reports_when_it_last_advanced_and_when_it_waits_for_work() -> None:
    sim = Simulation(default_config())
    scheduler = sim.start()
    real_writer = sim.cluster.patch_status
    release = asyncio.Event()

    class HeldWriter:
        async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
            await release.wait()
            await real_writer(pod, patch)

    sim.cluster.patch_status = HeldWriter().patch_status  # type: ignore[method-assign]
    sim.apply(make_node("n1").capacity(cpu="1", memory="4Gi", pods=10).obj())
    sim.apply(pod("big", cpu="2").obj())
    stop = asyncio.Event()
    running = asyncio.create_task(scheduler.run(stop))
    for _ in range(200):
        await asyncio.sleep(0)
    assert scheduler.cycle == 1
    assert scheduler.last_advanced == sim.clock.now()  # on a step: the held status patch

    release.set()
    for _ in range(200):
        await asyncio.sleep(0)
    assert scheduler.last_advanced is None  # nothing left to pop

    stop.set()
    await running
    await scheduler.drain()


async def test_a_binding_whose_reply_is_lost_after_the_watch_confirmed_it_counts_as_bound(
    caplog: Any,
) -> None:
    """The API server bound the pod and the watch said so, then the connection broke before the
    reply to the binding request arrived: the pod is scheduled, not a failure to undo."""
    sim = Simulation(default_config())
    cluster = sim.cluster
    bind = cluster.bind

    async def bind_then_lose_the_reply(p: Any, node_name: str) -> None:
        await bind(p, node_name)  # the watch delivers the bound pod to the cache at once
        raise TransportError("ServerDisconnectedError: Server disconnected")

    cluster.bind = bind_then_lose_the_reply  # type: ignore[method-assign]
    sim.start()
    sim.apply(make_node("n1").capacity(cpu="2", memory="1Gi", pods=10).obj())
    sim.apply(pod("p", cpu="1").obj())
    sim.apply(pod("q", cpu="1").obj())
    await sim.run_until_quiet()

    assert sim.cluster.pods["default/p"]["spec"]["nodeName"] == "n1"
    assert sim.cluster.pods["default/q"]["spec"]["nodeName"] == "n1"
    assert [reason for reason, _, _ in events(sim)] == ["Scheduled", "Scheduled"]
    assert conditions(sim, "default/p")["PodScheduled"]["status"] == "True"
    assert sim.scheduler is not None
    node = sim.scheduler.cache.get_node_info("n1")
    assert node is not None and node.requested.milli_cpu == 2000
    assert not sim.scheduler.cache.assumed_pods()
    assert not [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")]


def scheduler_lines(caplog: pytest.LogCaptureFixture, event: str) -> list[dict[str, Any]]:
    return [
        record.msg
        for record in caplog.records
        if record.name == "kopf_scheduler.scheduler"
        and isinstance(record.msg, dict)
        and record.msg["event"] == event
    ]


@pytest.mark.parametrize("failure", ["refused", "raised"])
async def test_a_binding_that_fails_after_later_cycles_reports_the_cycle_of_its_own_attempt(
    caplog: pytest.LogCaptureFixture, failure: str
) -> None:
    """The first pod's binding cycle fails (the API server refuses the binding, or the cycle
    raises) only once two later pods were scheduled and bound: the failure's log lines and its
    explanation name cycle 1, where the attempt began, not cycle 3."""
    caplog.set_level(logging.INFO, logger="kopf_scheduler.scheduler")
    sim = Simulation(default_config())
    bind = sim.cluster.bind
    others_bound = asyncio.Event()
    bound: list[str] = []
    failed: list[str] = []

    async def bind_the_others_first(p: Any, node_name: str) -> None:
        if failure == "refused" and p.name == "first" and not failed:
            await others_bound.wait()
            failed.append(p.key)
            raise ApiError(403, "Forbidden", "binding refused once")
        await bind(p, node_name)
        bound.append(p.key)
        if len(bound) == 2:
            others_bound.set()

    sim.cluster.bind = bind_the_others_first  # type: ignore[method-assign]
    scheduler = sim.start()
    framework = scheduler.profiles[SCHED]
    wait_on_permit = framework.wait_on_permit

    async def raise_for_the_first_once(p: Any, sleep: Any) -> Any:
        if failure == "raised" and p.name == "first" and not failed:
            await others_bound.wait()
            failed.append(p.key)
            raise RuntimeError("the binding cycle broke")
        return await wait_on_permit(p, sleep)

    framework.wait_on_permit = raise_for_the_first_once  # type: ignore[method-assign]
    sim.apply(make_node("n1").capacity(cpu="8", memory="8Gi", pods=110).obj())
    sim.apply(pod("first", cpu="100m").priority(10).obj())
    sim.apply(pod("second", cpu="100m").obj())
    sim.apply(pod("third", cpu="100m").obj())
    await sim.run_until_quiet()

    assert failed == ["default/first"]
    assert bound == ["default/second", "default/third", "default/first"]
    events = ["pod_scheduling_error"]
    if failure == "raised":
        events.insert(0, "binding_cycle_failed")
    lines = [
        (event, line["pod"], line["cycle"])
        for event in events
        for line in scheduler_lines(caplog, event)
    ]
    assert lines == [(event, "default/first", 1) for event in events]
    first = [(a.result, a.cycle) for a in sim.attempts if a.pod == "default/first"]
    assert first == [("error", 1), ("scheduled", 4)]


async def test_a_loop_woken_by_the_queue_takes_its_pod_at_the_next_turn_of_the_event_loop() -> None:
    """Before the watch reader applies its next event (it yields once after each): the cycle
    sees the cluster as the event that woke it left it, as kube-scheduler's does."""
    sim = Simulation(default_config())
    scheduler = sim.start()
    sim.apply(make_node("n1").capacity(cpu="4", memory="4Gi", pods=10).obj())
    stop = asyncio.Event()
    running = asyncio.create_task(scheduler.run(stop))
    for _ in range(10):
        await asyncio.sleep(0)
    assert scheduler.last_advanced is None  # waiting for work

    sim.apply(pod("p", cpu="1").obj())
    await asyncio.sleep(0)

    assert scheduler.queue.pending_pods() == []
    assert [assumed.name for assumed in scheduler.cache.assumed_pods()] == ["p"]
    stop.set()
    await asyncio.wait_for(running, 5)


async def test_an_error_after_a_rejection_retries_the_pod_after_backoff() -> None:
    """A pod first rejected by NodeResourcesFit, whose next attempt, once a node with room has
    come, ends in a plugin's error: kube-scheduler forgets an attempt's rejecting plugins when it
    pops the pod for the next one, so the error sends the pod to backoff and it binds seconds
    later, not once another event about cpu comes or the five-minute flush."""
    sim = Simulation(default_config())
    scheduler = sim.start()
    algorithm = scheduler.algorithm
    schedule_pod = algorithm.schedule_pod
    failed: list[float] = []

    def fail_once_after_the_node_came(framework: Any, state: Any, p: Any, snapshot: Any) -> Any:
        if "big" in sim.cluster.nodes and not failed:
            failed.append(sim.clock.now())
            raise SchedulingError(Status(Code.ERROR, "a plugin failed once"))
        return schedule_pod(framework, state, p, snapshot)

    algorithm.schedule_pod = fail_once_after_the_node_came  # type: ignore[method-assign]
    sim.apply(make_node("small").capacity(cpu="1", memory="8Gi", pods=110).obj())
    sim.apply(pod("p", cpu="2").obj())
    await sim.run_until_quiet()
    assert conditions(sim, "default/p")["PodScheduled"]["reason"] == "Unschedulable"

    sim.apply(make_node("big").capacity(cpu="4", memory="8Gi", pods=110).obj())
    await sim.run_until_quiet()
    assert failed
    assert sim.cluster.pods["default/p"]["spec"]["nodeName"] == "big"
    [scheduled] = [e for e in sim.cluster.events if e.reason == "Scheduled"]
    assert scheduled.time - failed[0] < 5
