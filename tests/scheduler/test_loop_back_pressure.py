"""Back-pressure from the bindings to the scheduling loop, against an API server that throttles.

The fake API server answers every pod's first binding requests with 429 and ``Retry-After``, more
of them than one request's retries cover, so each pod's first binding cycle fails and the pod
goes back to the queue. The loop must keep at most ``max_binding_cycles`` bindings (and assumed
pods) unfinished, and in the end every pod is bound, exactly once. Time is virtual: it jumps to
the next sleeper whenever nothing else can run.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections import Counter, defaultdict
from collections.abc import AsyncIterator
from typing import Any

import kmock
import pytest
from kubernetes_asyncio.client import ApiClient, Configuration

from kopf_scheduler.config.loader import default_config
from kopf_scheduler.k8s.binder import ApiBinder
from kopf_scheduler.k8s.client import Api
from kopf_scheduler.k8s.ratelimit import Unlimited
from kopf_scheduler.ports import ApiError, PodRef, PodStatusPatch
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.sim.runner import Simulation
from tests.builders import make_node, make_pod
from tests.k8s.support import drive, ok, status

SCHED = "kopf-scheduler"
PODS = 20
LIMIT = 4
THROTTLED_PER_POD = 6
"""More 429s than one binding request's five attempts, so every pod is requeued once."""
RETRY_AFTER = 2.0


class ThrottlingServer:
    """pods/binding: 429 with Retry-After for a pod's first requests, then the in-memory bind."""

    def __init__(self, sim: Simulation) -> None:
        self.sim = sim
        self.bind = sim.cluster.bind
        self.requests: Counter[str] = Counter()
        self.bound: defaultdict[str, list[str]] = defaultdict(list)
        self.conflicts = 0
        self.last_429: dict[str, float] = {}
        self.early: list[str] = []
        """Pods asked again sooner than the Retry-After of their last 429."""

    async def __call__(self, request: kmock.Request) -> kmock.Response:
        metadata = request.data["metadata"]
        key = f"{metadata['namespace']}/{metadata['name']}"
        now = self.sim.clock.now()
        throttled_at = self.last_429.get(key)
        if throttled_at is not None and now - throttled_at < RETRY_AFTER:
            self.early.append(key)
        self.requests[key] += 1
        if self.requests[key] <= THROTTLED_PER_POD:
            self.last_429[key] = now
            return kmock.Response(
                status=429,
                payload=status(429, "TooManyRequests", "the server is handling too many requests"),
                headers={"Retry-After": f"{RETRY_AFTER:g}"},
            )
        node = request.data["target"]["name"]
        assert self.sim.scheduler is not None
        pod = self.sim.store.get_pod(key)
        assert pod is not None
        if pod.node_name:
            self.conflicts += 1
            message = f'pod {metadata["name"]} is already assigned to node "{pod.node_name}"'
            return kmock.Response(status=409, payload=status(409, "Conflict", message))
        await self.bind(pod, node)
        self.bound[key].append(node)
        return ok({"kind": "Status", "status": "Success", "code": 201}, 201)


async def stop(
    simulation: Simulation, scheduler: Scheduler, flag: asyncio.Event, running: asyncio.Task[None]
) -> None:
    """Stop the loop and let the bindings still in flight end (they sleep in virtual time)."""
    flag.set()
    await running
    with contextlib.suppress(AssertionError):
        await drive(simulation.clock, lambda: scheduler.pending_tasks == 0, steps=20_000)


async def until_bound(simulation: Simulation, *names: str) -> None:
    """Let virtual time run until every pod of ``names`` has a node in the cluster."""
    pods = simulation.cluster.pods
    await drive(
        simulation.clock,
        lambda: all(pods[f"default/{name}"]["spec"].get("nodeName") for name in names),
        steps=20_000,
    )


@pytest.fixture
async def sim(
    kmock: kmock.RawHandler, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Simulation, ThrottlingServer]]:
    """The simulation with ``request.param`` places for binding cycles, binding through a
    throttling API server."""
    sim = Simulation(default_config(), max_binding_cycles=request.param)
    client = ApiClient(Configuration(host=str(kmock.url).rstrip("/")))
    api = Api(client, limiter=Unlimited(), clock=sim.clock, timeout=10.0)
    server = ThrottlingServer(sim)
    kmock["post", re.compile("/api/v1/namespaces/default/pods/[^/]+/binding")] << server
    sim.cluster.bind = ApiBinder(api).bind  # type: ignore[method-assign]
    yield sim, server
    await api.close()


@pytest.mark.parametrize("sim", [LIMIT], indirect=True)
async def test_under_sustained_429s_bindings_stay_bounded_and_each_pod_binds_once(
    sim: tuple[Simulation, ThrottlingServer],
) -> None:
    simulation, server = sim
    scheduler = simulation.start()
    simulation.apply(make_node("n1").capacity(cpu="64", memory="64Gi", pods=110).obj())
    names = [f"p{i}" for i in range(PODS)]
    for name in names:
        simulation.apply(make_pod(name).scheduler(SCHED).req(cpu="100m").obj())

    most_binding = 0
    most_assumed = 0
    most_tasks = 0
    schedule_one = scheduler.schedule_one

    def observed() -> bool:
        nonlocal most_binding, most_assumed, most_tasks
        popped = schedule_one()
        most_binding = max(most_binding, scheduler.binding_cycles)
        most_assumed = max(most_assumed, len(scheduler.cache.assumed_pods()))
        most_tasks = max(most_tasks, scheduler.pending_tasks)
        return popped

    scheduler.schedule_one = observed  # type: ignore[method-assign]
    flag = asyncio.Event()
    running = asyncio.create_task(scheduler.run(flag))
    keys = [f"default/{name}" for name in names]
    try:
        await drive(
            simulation.clock,
            lambda: all(simulation.cluster.pods[key]["spec"].get("nodeName") for key in keys),
            steps=50_000,
        )
    finally:
        await stop(simulation, scheduler, flag, running)

    assert most_binding <= LIMIT
    assert most_assumed <= LIMIT
    assert most_tasks <= 2 * LIMIT  # binding cycles and the status patches they wait for
    assert {key: len(nodes) for key, nodes in server.bound.items()} == dict.fromkeys(keys, 1)
    assert server.conflicts == 0
    assert all(count > THROTTLED_PER_POD for count in server.requests.values())
    assert server.early == []  # every retry honoured Retry-After
    assert not scheduler.cache.assumed_pods()
    assert scheduler.queue.pending_pods() == []
    scheduled = [e.object for e in simulation.cluster.events if e.reason == "Scheduled"]
    assert sorted(scheduled) == sorted(keys)


@pytest.mark.parametrize("sim", [1], indirect=True)
async def test_the_loop_waits_for_a_binding_place_and_goes_on_when_one_frees(
    sim: tuple[Simulation, ThrottlingServer],
) -> None:
    """With one place, the second pod is popped only after the first pod's binding ended."""
    simulation, server = sim
    scheduler = simulation.start()
    simulation.apply(make_node("n1").capacity(cpu="8", memory="8Gi", pods=110).obj())
    simulation.apply(make_pod("first").scheduler(SCHED).req(cpu="100m").priority(10).obj())
    simulation.apply(make_pod("second").scheduler(SCHED).req(cpu="100m").obj())
    flag = asyncio.Event()
    running = asyncio.create_task(scheduler.run(flag))
    try:
        await drive(simulation.clock, lambda: server.requests["default/first"] >= 1)
        for _ in range(50):
            await asyncio.sleep(0)
        assert scheduler.cycle == 1  # "first" binds (throttled); "second" waits in the queue
        assert [p.key for p in scheduler.queue.pending_pods()] == ["default/second"]
        await until_bound(simulation, "first", "second")
    finally:
        await stop(simulation, scheduler, flag, running)
    assert server.bound == {"default/first": ["n1"], "default/second": ["n1"]}


async def test_a_failed_binding_holds_its_place_until_the_pods_status_is_patched() -> None:
    """As upstream's binding goroutine, which runs the failure handler before it ends: under a
    slow API server the status patches of failed bindings count against the bound too."""
    simulation = Simulation(default_config(), max_binding_cycles=1)
    scheduler = simulation.start()
    bind = simulation.cluster.bind
    real_writer = simulation.cluster.patch_status
    release = asyncio.Event()
    refused: list[str] = []

    async def refuse_first(pod: Any, node_name: str) -> None:
        if not refused:
            refused.append(pod.key)
            raise ApiError(403, "Forbidden", "binding refused once")
        await bind(pod, node_name)

    class HeldWriter:
        async def patch_status(self, pod: PodRef, patch: PodStatusPatch) -> None:
            await release.wait()
            await real_writer(pod, patch)

    simulation.cluster.bind = refuse_first  # type: ignore[method-assign]
    simulation.cluster.patch_status = HeldWriter().patch_status  # type: ignore[method-assign]
    simulation.apply(make_node("n1").capacity(cpu="8", memory="8Gi", pods=110).obj())
    simulation.apply(make_pod("first").scheduler(SCHED).req(cpu="100m").priority(10).obj())
    simulation.apply(make_pod("second").scheduler(SCHED).req(cpu="100m").obj())
    flag = asyncio.Event()
    running = asyncio.create_task(scheduler.run(flag))
    try:
        for _ in range(200):
            await asyncio.sleep(0)
        assert refused == ["default/first"]
        assert scheduler.binding_cycles == 1  # waiting for the failure's status patch
        assert scheduler.cycle == 1  # so "second" is not popped yet
        release.set()
        await until_bound(simulation, "first", "second")
    finally:
        release.set()
        await stop(simulation, scheduler, flag, running)
    assert scheduler.binding_cycles == 0
