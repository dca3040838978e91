"""What the scheduler does with each change the watches report: the cache it updates and the
cluster events it offers the rejected pods, in order, as upstream's event handlers do."""

from __future__ import annotations

from typing import Any

import pytest

from kopf_scheduler.assembly import ClusterView, Ports, build_scheduler
from kopf_scheduler.config.loader import default_config
from kopf_scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    ActionType,
    EventResource,
    object_event,
)
from kopf_scheduler.informer.node_events import node_update_events
from kopf_scheduler.informer.store import Store
from kopf_scheduler.model.node import Node
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.virtual_clock import VirtualClock
from tests.builders import make_node, make_pod

SCHED = "kopf-scheduler"

Move = tuple[str, Any, Any, bool]
"""An offered cluster event: its label, the old and new objects, whether a pre-check narrowed
the pods it was offered to."""


@pytest.fixture
def scheduler() -> Scheduler:
    clock = VirtualClock()
    cluster = InMemoryCluster(clock)
    store = Store()
    ports = Ports(clock, cluster, cluster, cluster, cluster, storage_writer=cluster)
    return build_scheduler(
        default_config(), ports, ClusterView(store.get_pod, store.list_pdbs, store.storage)
    )


@pytest.fixture
def moves(scheduler: Scheduler, monkeypatch: pytest.MonkeyPatch) -> list[Move]:
    offered: list[Move] = []
    queue = scheduler.queue
    offer = queue.move_all_to_active_or_backoff_queue

    def record(event: Any, old: Any = None, new: Any = None, pre_check: Any = None) -> None:
        offered.append((event.label, old, new, pre_check is not None))
        offer(event, old, new, pre_check)

    monkeypatch.setattr(queue, "move_all_to_active_or_backoff_queue", record)
    return offered


def test_a_node_is_cached_and_each_change_offered_as_its_events(
    scheduler: Scheduler, moves: list[Move]
) -> None:
    node = make_node("n1").node()
    scheduler.on_node_added(node)
    assert scheduler.node("n1") is node
    cordoned = Node(make_node("n1").unschedulable().obj())
    taint, label = (
        object_event(EventResource.NODE, ActionType.UPDATE_NODE_TAINT),
        object_event(EventResource.NODE, ActionType.UPDATE_NODE_LABEL),
    )

    scheduler.on_node_updated(node, cordoned, [taint, label])
    assert scheduler.node("n1") is cordoned
    scheduler.on_node_deleted("n1")

    assert scheduler.node("n1") is None
    assert moves == [
        (NODE_ADD.label, None, node, False),
        (taint.label, node, cordoned, False),
        (label.label, node, cordoned, False),
        (NODE_DELETE.label, None, None, False),
    ]


def test_a_node_update_is_labelled_as_kube_scheduler_labels_it() -> None:
    old = make_node("n1").capacity(cpu="4").node()
    new = make_node("n1").capacity(cpu="8").label("zone", "a").taint("dedicated").node()
    assert [event.label for event in node_update_events(old, new)] == [
        "NodeUpdateNodeAllocatable",
        "NodeUpdateNodeLabel",
        "NodeUpdateNodeTaint",
    ]


def test_an_unreadable_node_leaves_the_cache_without_an_event(
    scheduler: Scheduler, moves: list[Move]
) -> None:
    scheduler.on_node_added(make_node("n1").node())
    moves.clear()

    scheduler.on_node_unreadable("n1")

    assert scheduler.node("n1") is None
    assert moves == []


def test_namespace_labels_reach_the_snapshot(scheduler: Scheduler) -> None:
    scheduler.on_namespace_updated("team", {"tier": "gold"})
    scheduler.cache.update_snapshot(scheduler.snapshot)
    assert scheduler.snapshot.namespace_labels == {"team": {"tier": "gold"}}

    scheduler.on_namespace_deleted("team")
    scheduler.cache.update_snapshot(scheduler.snapshot)
    assert scheduler.snapshot.namespace_labels == {}


def test_any_other_change_is_offered_as_it_comes(scheduler: Scheduler, moves: list[Move]) -> None:
    event = object_event(EventResource.STORAGE_CLASS, ActionType.ADD)

    scheduler.on_cluster_event(event, None, "fast")

    assert moves == [(event.label, None, "fast", False)]


def test_an_assigned_pod_takes_room_until_deleted(scheduler: Scheduler, moves: list[Move]) -> None:
    scheduler.on_node_added(make_node("n1").node())
    moves.clear()
    bound = make_pod("p").uid("u1").scheduler(SCHED).node("n1").pod()
    relabelled = make_pod("p").uid("u1").scheduler(SCHED).node("n1").labels(app="web").pod()

    scheduler.on_assigned_pod_added(bound)
    assert scheduler.cache.pod_count() == 1
    scheduler.on_assigned_pod_updated(bound, relabelled)
    assert scheduler.cache.pod_count() == 1
    scheduler.on_assigned_pod_deleted(relabelled)

    assert scheduler.cache.pod_count() == 0
    assert moves[0] == (ASSIGNED_POD_ADD.label, None, bound, False)
    assert moves[-1] == (ASSIGNED_POD_DELETE.label, relabelled, None, False)


def test_a_pending_pod_is_queued_and_leaves_the_queue_when_deleted(
    scheduler: Scheduler, moves: list[Move]
) -> None:
    pending = make_pod("p").scheduler(SCHED).pod()
    scheduler.on_pending_pod_added(pending)
    assert scheduler.queue.location(pending) == "active"

    scheduler.on_pending_pod_deleted(pending)

    assert scheduler.queue.location(pending) is None
    assert moves == []  # it held no room: nothing may retry


def test_a_pending_pod_that_drops_its_nomination_lets_lower_priorities_retry(
    scheduler: Scheduler, moves: list[Move]
) -> None:
    nominated = make_pod("p").scheduler(SCHED).priority(10).nominated("n1").pod()
    renominated = make_pod("p").uid(nominated.uid).scheduler(SCHED).priority(10).pod()
    scheduler.on_pending_pod_added(nominated)

    scheduler.on_pending_pod_updated(nominated, renominated)

    assert scheduler.queue.queued_pod(renominated.key) is renominated
    assert moves == [(ASSIGNED_POD_DELETE.label, nominated, None, True)]


def test_a_nominated_pending_pod_deleted_lets_lower_priorities_retry(
    scheduler: Scheduler, moves: list[Move]
) -> None:
    nominated = make_pod("p").scheduler(SCHED).priority(10).nominated("n1").pod()
    scheduler.on_pending_pod_added(nominated)

    scheduler.on_pending_pod_deleted(nominated)

    assert moves == [(ASSIGNED_POD_DELETE.label, nominated, None, True)]


def test_a_pod_of_another_scheduler_is_not_ours_to_dequeue(
    scheduler: Scheduler, moves: list[Move]
) -> None:
    foreign = make_pod("p").scheduler("someone-else").nominated("n1").pod()

    scheduler.on_pending_pod_deleted(foreign)

    assert moves == []
