"""Properties of the scheduling queue under random operation sequences.

- every pending pod is in exactly one of activeQ, backoffQ, unschedulablePods or in flight, and
  nothing else is anywhere;
- a pod popped from a non-empty activeQ is one no other active pod sorts before;
- a pod is gated exactly while it carries scheduling gates;
- backoff never exceeds the maximum and does not shrink across failures of the same kind.
"""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from kopf_scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    ClusterEvent,
)
from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.scheduling_gates import SchedulingGates
from kopf_scheduler.queue.backoff import DEFAULT_POD_MAX_BACKOFF
from tests.builders import make_pod
from tests.queue.fakes import EventsPlugin, make_queue, registration, skip_hint

NAMES = [f"p{i}" for i in range(8)]


def _sort_key(info: QueuedPodInfo) -> tuple[int, float, int]:
    """PrioritySort's order, spelled out independently of the code under test."""
    return (-info.pod.priority, info.timestamp, info.sequence)


def _pod(name: str, priority: int, gated: bool, version: int) -> Pod:
    builder = make_pod(name).uid(f"uid-{name}").priority(priority).label("v", str(version))
    if gated:
        builder = builder.gate("example.com/hold")
    return builder.pod()


class QueueMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.h = make_queue(
            [
                SchedulingGates(),
                EventsPlugin("fit", [registration(NODE_ADD), registration(ASSIGNED_POD_DELETE)]),
                EventsPlugin("picky", [registration(NODE_ADD, skip_hint)]),
            ]
        )
        self.pending: dict[str, Pod] = {}
        self.in_flight: dict[str, QueuedPodInfo] = {}
        self.last_backoff: dict[str, tuple[bool, float]] = {}
        self.version = 0

    # Pods arriving and leaving --------------------------------------------------------------

    @rule(name=st.sampled_from(NAMES), priority=st.integers(0, 3), gated=st.booleans())
    def add(self, name: str, priority: int, gated: bool) -> None:
        if name in self.pending:
            return
        pod = _pod(name, priority, gated, self.version)
        self.pending[name] = pod
        self.h.queue.add(pod)

    @rule(name=st.sampled_from(NAMES), ungate=st.booleans())
    def update(self, name: str, ungate: bool) -> None:
        old = self.pending.get(name)
        if old is None or name in self.in_flight:
            return
        self.version += 1
        gated = bool(old.scheduling_gates) and not ungate
        new = _pod(name, old.priority, gated, self.version)
        self.pending[name] = new
        self.h.queue.update(old, new)

    @rule(name=st.sampled_from(NAMES))
    def delete(self, name: str) -> None:
        pod = self.pending.get(name)
        if pod is None or name in self.in_flight:
            return
        del self.pending[name]
        self.last_backoff.pop(name, None)  # a pod made again under this name starts over
        self.h.queue.delete(pod)

    @rule(name=st.sampled_from(NAMES))
    def activate(self, name: str) -> None:
        pod = self.pending.get(name)
        if pod is not None:
            self.h.queue.activate([pod])

    # The scheduling loop --------------------------------------------------------------------

    @rule()
    def pop(self) -> None:
        queue = self.h.queue
        active = [info for pod in queue.active_pods() if (info := queue.get(pod.key)) is not None]
        info = queue.pop()
        if info is None:
            assert not active
            assert queue.pending_counts()["active"] == 0
            return
        name = info.pod.name
        assert name in self.pending
        assert name not in self.in_flight
        assert info.pod is self.pending[name]
        if active:
            assert any(other is info for other in active), "popped from backoffQ with active pods"
            assert _sort_key(info) == min(_sort_key(other) for other in active)
        self.in_flight[name] = info

    @precondition(lambda self: bool(self.in_flight))
    @rule(data=st.data(), plugins=st.sampled_from([(), ("fit",), ("picky",), ("fit", "picky")]))
    def fail(self, data: st.DataObject, plugins: tuple[str, ...]) -> None:
        name = data.draw(st.sampled_from(sorted(self.in_flight)))
        info = self.in_flight.pop(name)
        assert self.h.fail(info, *plugins)
        is_error = not plugins
        duration = self.h.queue.backoff_duration(info)
        assert 0 < duration <= DEFAULT_POD_MAX_BACKOFF
        previous = self.last_backoff.get(name)
        if previous is not None and previous[0] == is_error:
            assert duration >= previous[1]
        self.last_backoff[name] = (is_error, duration)

    @precondition(lambda self: bool(self.in_flight))
    @rule(data=st.data())
    def bind(self, data: st.DataObject) -> None:
        name = data.draw(st.sampled_from(sorted(self.in_flight)))
        info = self.in_flight.pop(name)
        self.h.queue.done(info.pod.uid)
        del self.pending[name]
        self.last_backoff.pop(name, None)

    # Time and cluster events ----------------------------------------------------------------

    @rule(seconds=st.sampled_from([0.0, 0.4, 1.0, 2.5, 11.0, 301.0]))
    def tick(self, seconds: float) -> None:
        self.h.clock.advance(seconds)
        self.h.queue.flush_backoff_completed()
        if seconds >= 30:
            self.h.queue.flush_unschedulable_leftover()

    @rule(event=st.sampled_from([NODE_ADD, ASSIGNED_POD_DELETE, UNSCHEDULABLE_TIMEOUT]))
    def cluster_event(self, event: ClusterEvent) -> None:
        self.h.queue.move_all_to_active_or_backoff_queue(event)

    # Invariants -----------------------------------------------------------------------------

    @invariant()
    def each_pending_pod_is_in_exactly_one_place(self) -> None:
        queue = self.h.queue
        places = (
            [pod.name for pod in queue.active_pods()]
            + [pod.name for pod in queue.backoff_pods()]
            + [pod.name for pod in queue.unschedulable_pods()]
            + [pod.name for pod in queue.in_flight_pods()]
        )
        assert sorted(places) == sorted(self.pending)
        assert sorted(pod.name for pod in queue.in_flight_pods()) == sorted(self.in_flight)
        assert sum(queue.pending_counts().values()) == len(self.pending) - len(self.in_flight)

    @invariant()
    def gated_exactly_while_gates_remain(self) -> None:
        for name, pod in self.pending.items():
            if name in self.in_flight:
                assert not pod.scheduling_gates
                continue
            assert (self.h.queue.location(pod) == "gated") == bool(pod.scheduling_gates)

    @invariant()
    def queued_objects_are_current(self) -> None:
        for name, pod in self.pending.items():
            if name not in self.in_flight:
                info = self.h.queue.get(pod.key)
                assert info is not None
                assert info.pod is pod


TestQueueMachine = QueueMachine.TestCase
TestQueueMachine.settings = settings(max_examples=150, stateful_step_count=40, deadline=None)
