"""The composition root builds every object whole: each handle is given its services when it
is made, and the scheduler, the queue and the handles share one task runner, one wake-up and
one nominator, with nothing attached afterwards."""

from __future__ import annotations

from collections.abc import Coroutine
from dataclasses import replace
from typing import Any

from kopf_scheduler.assembly import ClusterView, Ports, build_scheduler
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.informer.store import Store
from kopf_scheduler.scheduler.tasks import BackgroundTasks
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.builders import make_pod


def test_a_handle_is_given_its_services_when_it_is_made() -> None:
    store = Store()

    def spawn(coroutine: Coroutine[Any, Any, None]) -> None:
        coroutine.close()

    handle = Handle(get_pod=store.get_pod, pdbs=store.list_pdbs, spawn=spawn)

    assert handle.get_pod == store.get_pod
    assert handle.pdbs == store.list_pdbs
    assert handle.spawn is spawn


async def test_the_scheduler_the_queue_and_the_handles_are_wired_at_construction() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    store = Store()
    config = default_config()
    config = replace(config, extensions=replace(config.extensions, nomination_hygiene=False))
    ports = Ports(clock, cluster, cluster, cluster, cluster, storage_writer=cluster)

    scheduler = build_scheduler(
        config, ports, ClusterView(store.get_pod, store.list_pdbs, store.storage)
    )

    handle = scheduler.profiles["kopf-scheduler"].handle
    assert handle.nominator is scheduler.queue.nominator
    assert handle.binder is cluster and handle.storage is store.storage
    assert not scheduler.nominations.enabled  # from the configuration, not patched in
    # The nominator built before the queue sees the pods the queue holds.
    pod = make_pod("p").scheduler("kopf-scheduler").pod()
    scheduler.queue.add(pod)
    assert handle.nominator is scheduler.queue.nominator
    assert scheduler.queue.nominator.lookup is not None
    assert scheduler.queue.nominator.lookup(pod.key) is pod
    # The handles' background runner is the one the scheduler drains, given to both.
    assert getattr(handle.spawn, "__self__", None) is scheduler._tasks
    ran: list[str] = []

    async def background() -> None:
        ran.append("done")

    handle.spawn(background())
    await scheduler.drain()
    assert ran == ["done"]


async def test_a_caller_may_share_the_task_runner_and_start_a_follower() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    store = Store()
    tasks = BackgroundTasks()
    ports = Ports(clock, cluster, cluster, cluster, cluster, storage_writer=cluster)

    scheduler = build_scheduler(
        default_config(),
        ports,
        ClusterView(store.get_pod, store.list_pdbs, store.storage),
        tasks=tasks,
        active=False,
    )

    assert not scheduler.active  # a follower pops nothing until it leads
    handle = scheduler.profiles["kopf-scheduler"].handle
    assert getattr(handle.spawn, "__self__", None) is tasks
    ran: list[str] = []

    async def explanation_write() -> None:
        ran.append("written")

    tasks.spawn(explanation_write())
    await scheduler.drain()  # waits for what the caller started on the shared runner
    assert ran == ["written"]
