"""The binding cycle reports how long a pod waits between the end of its scheduling cycle and
its binding request, the stage the loop cannot see once it has moved on to the next pod."""

from __future__ import annotations

from typing import Any

from kopf_scheduler import metric_names as m
from kopf_scheduler.assembly import ClusterView, Ports, build_scheduler
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.informer.handlers import EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.builders import make_node, make_pod
from tests.queue.fakes import RecordingMetrics

SCHED = "kopf-scheduler"


async def test_the_wait_from_the_scheduling_cycle_to_the_binding_request_is_observed() -> None:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    metrics = RecordingMetrics()
    store = Store()
    ports = Ports(
        clock, cluster, cluster, cluster, cluster, metrics=metrics, storage_writer=cluster
    )
    view = ClusterView(store.get_pod, store.list_pdbs, store.storage)
    scheduler = build_scheduler(default_config(), ports, view)
    handlers = EventHandlers(scheduler, store)
    routes = {"Node": handlers.route("Node"), "Pod": handlers.route("Pod")}

    def route(kind: str, event_type: str, raw: Any) -> None:
        if kind in routes:
            routes[kind](event_type, raw)

    cluster.subscribe(route)
    cluster.create(make_node("n1").obj())
    cluster.create(make_pod("p").scheduler(SCHED).obj())

    assert scheduler.schedule_one()
    clock.advance_to(clock.now() + 3)  # before the binding task gets its turn
    await scheduler.drain()

    assert cluster.pods["default/p"]["spec"]["nodeName"] == "n1"
    assert metrics.observed(m.BINDING_REQUEST_DELAY) == [3.0]
