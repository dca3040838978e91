"""The scheduling queue facade: pops, failures, backoff, flushes, events, updates and deletes."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from kopf_scheduler import metric_names as m
from kopf_scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    FORCE_ACTIVATE,
    NODE_ADD,
    UNSCHEDULABLE_TIMEOUT,
    UNSCHEDULED_POD_UPDATE,
    ActionType,
    ClusterEvent,
    EventResource,
    HintFn,
)
from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugins.scheduling_gates import SchedulingGates
from kopf_scheduler.queue import SchedulingQueue, priority_at_most
from tests.builders import make_node, make_pod
from tests.queue.fakes import (
    NAMESPACE_ADD,
    NODE_LABEL_UPDATE,
    PDB_ADD,
    PDB_UPDATE,
    AllowListPreEnqueue,
    EventsPlugin,
    Harness,
    SwitchGate,
    make_queue,
    queue_hint,
    registration,
    skip_hint,
)


def _pod(name: str, priority: int = 0, namespace: str = "default") -> Pod:
    return make_pod(name, namespace).uid(f"uid-{name}").priority(priority).pod()


def _plugin(name: str, *events: ClusterEvent, hint: HintFn | None = queue_hint) -> EventsPlugin:
    return EventsPlugin(name, [registration(event, hint) for event in events])


def _names(pods: Sequence[Pod]) -> list[str]:
    return sorted(pod.name for pod in pods)


# Pop ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arrivals", "order"),
    [
        pytest.param([("a", 0), ("b", 10), ("c", 5)], ["b", "c", "a"], id="by-priority"),
        pytest.param([("a", 1), ("b", 1), ("c", 1)], ["a", "b", "c"], id="equal-by-arrival"),
        pytest.param(
            [("low", -1), ("x", 3), ("y", 3), ("top", 100)],
            ["top", "x", "y", "low"],
            id="priority-then-arrival",
        ),
    ],
)
@pytest.mark.parametrize(
    "step", [pytest.param(1.0, id="clock-moves"), pytest.param(0.0, id="same-instant")]
)
def test_pop_order(arrivals: list[tuple[str, int]], order: list[str], step: float) -> None:
    h = make_queue()
    for name, priority in arrivals:
        h.queue.add(_pod(name, priority))
        h.clock.advance(step)
    popped = []
    while (info := h.queue.pop()) is not None:
        popped.append(info.pod.name)
    assert popped == order


def test_pop_tracks_attempts_cycles_and_in_flight() -> None:
    h = make_queue()
    assert h.queue.pop() is None
    pod = _pod("p")
    h.queue.add(pod)
    h.clock.advance(5)
    info = h.pop(pod)
    assert (info.attempts, h.queue.scheduling_cycle) == (1, 1)
    assert info.initial_attempt_timestamp == 1000.0
    assert h.where(pod) == "in-flight"
    assert h.queue.is_in_flight(pod.uid)
    assert h.queue.in_flight_pods() == [pod]
    h.queue.done(pod.uid)
    h.queue.done(pod.uid)
    assert h.where(pod) is None
    assert h.queue.pop() is None


def test_the_wait_before_the_first_attempt_is_observed_once_per_pod() -> None:
    h = make_queue()
    pod = _pod("p")
    h.queue.add(pod)  # t=1000: enters activeQ
    h.clock.advance(5)
    info = h.pop(pod)  # t=1005: first attempt
    h.fail(info)
    h.clock.advance(10)
    h.queue.flush_backoff_completed()
    h.pop(pod)  # a retry is no first attempt
    assert h.metrics.observed(m.QUEUE_WAIT_BEFORE_FIRST_ATTEMPT) == [5.0]


def test_time_gated_before_activeq_is_not_queue_wait() -> None:
    gate = SwitchGate("Gate")
    h = make_queue([gate])
    pod = _pod("p")
    h.queue.add(pod)  # t=1000: held by PreEnqueue
    h.clock.advance(30)
    gate.closed = False
    h.queue.activate([pod])  # t=1030: enters activeQ
    h.clock.advance(2)
    h.pop(pod)
    assert h.metrics.observed(m.QUEUE_WAIT_BEFORE_FIRST_ATTEMPT) == [2.0]


def test_retried_pod_goes_behind_equal_priority_pods_added_earlier() -> None:
    h = make_queue()
    a, b, c = _pod("a", 5), _pod("b", 5), _pod("c", 5)
    h.queue.add(a)  # t=1000
    h.clock.advance(1)
    h.queue.add(b)  # t=1001
    h.clock.advance(1)
    info = h.pop(a)
    h.fail(info)  # error at t=1002: backoff 1 s, window 1003
    h.clock.advance(1)
    h.queue.add(c)  # t=1003
    h.clock.advance(1)
    h.queue.flush_backoff_completed()  # t=1004
    assert [h.pop().pod.name for _ in range(3)] == ["b", "a", "c"]


def test_pop_from_backoff_when_active_is_empty() -> None:
    """Upstream TestPriorityQueue_Pop: the rejected heap is popped early, the error heap is not."""
    high, high2, med, low = _pod("hpp", 1000), _pod("hpp2", 1000), _pod("mpp", 500), _pod("up")
    h = make_queue([_plugin("plugin", NODE_ADD)])
    for pod in (high, high2, low):
        h.queue.add(pod)
    popped = {name: h.pop() for name in ("hpp", "hpp2", "up")}
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    h.fail(popped["hpp"], "plugin")  # NODE_ADD happened meanwhile -> backoff (rejected heap)
    h.fail(popped["hpp2"])  # error -> backoff (error heap)
    h.fail(popped["up"], "other")  # nothing relevant happened -> unschedulable
    h.queue.add(med)
    assert h.queue.pending_counts() == {"active": 1, "backoff": 2, "unschedulable": 1, "gated": 0}
    assert h.pop().pod is med
    early = h.pop()
    assert early.pod is high
    assert early.attempts == 2
    assert h.queue.pop() is None
    assert h.metrics.counter(m.QUEUE_INCOMING_PODS, queue="active", event="PopFromBackoffQ") == 1


def test_duplicate_pop_is_discarded() -> None:
    """A record of a pod that is already in flight is dropped and the next pod is popped."""
    h = make_queue()
    p1, p3 = _pod("p1"), _pod("p3")
    h.queue.add(p1)
    first = h.pop(p1)
    h.queue.add(p1)  # an erroneous second add while p1 is being scheduled
    h.clock.advance(1)
    h.queue.add(p3)
    h.pop(p3)
    assert h.queue.pop() is None
    assert h.queue.pending_counts()["active"] == 0
    assert h.fail(first)
    assert h.where(p1) == "backoff"


# Backoff --------------------------------------------------------------------------------------


@pytest.mark.parametrize("failure", ["error", "rejection"])
def test_backoff_durations_double_up_to_the_cap(failure: str) -> None:
    h = make_queue([_plugin("plugin", NODE_ADD)], start=10.0)
    pod = _pod("p")
    h.queue.add(pod)
    for expected in (1, 2, 4, 8, 10, 10):
        h.clock.advance(0.3)
        info = h.pop(pod)
        failed_at = h.clock.t
        if failure == "error":
            h.fail(info)
        else:
            h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)
            h.fail(info, "plugin")
        assert h.queue.backoff_duration(info) == expected
        assert h.where(pod) == "backoff"
        released_at = int(failed_at + expected) + 1.0
        h.clock.t = released_at - 0.01
        h.queue.flush_backoff_completed()
        assert h.where(pod) == "backoff"
        h.clock.t = released_at
        h.queue.flush_backoff_completed()
        assert h.where(pod) == "active"
    counts = (info.unschedulable_count, info.consecutive_errors_count)
    assert counts == ((0, 6) if failure == "error" else (6, 0))


def test_whole_second_alignment_example() -> None:
    """Failed at 10.3 s with a 1 s backoff: expiry 11.3 -> window 11 -> released at 12.0."""
    h = make_queue(start=10.0)
    pod = _pod("p")
    h.queue.add(pod)
    h.clock.t = 10.3
    info = h.pop(pod)
    h.wakeups.clear()
    h.fail(info)
    assert h.wakeups == [10.3]  # any backoffQ entry wakes the loop, as upstream broadcasts
    assert h.queue.backoff_time(info) == 11.0
    for t in (11.0, 11.5, 11.99):
        h.clock.t = t
        h.queue.flush_backoff_completed()
        assert h.where(pod) == "backoff", t
    h.clock.t = 12.0
    h.queue.flush_backoff_completed()
    assert h.where(pod) == "active"
    assert h.wakeups[-1] == 12.0
    assert h.metrics.counter(m.QUEUE_INCOMING_PODS, queue="active", event="BackoffComplete") == 1


def test_error_after_rejections_restarts_backoff_from_one_second() -> None:
    h = make_queue([_plugin("plugin", NODE_ADD)])
    pod = _pod("p")
    h.queue.add(pod)
    for _ in range(3):
        info = h.pop(pod)
        h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)
        h.fail(info, "plugin")
        h.clock.advance(20)
        h.queue.flush_backoff_completed()
    info = h.pop(pod)
    h.fail(info)
    assert (info.unschedulable_count, info.consecutive_errors_count) == (3, 1)
    assert h.queue.backoff_duration(info) == 1
    assert h.where(pod) == "backoff"
    assert h.queue.pop() is None  # the error heap is never popped early


# Periodic flush of unschedulable pods --------------------------------------------------------


def test_unschedulable_flush_after_more_than_five_minutes() -> None:
    h = make_queue([_plugin("plugin", NODE_ADD)])
    old, young = _pod("old"), _pod("young")
    h.queue.add(old)
    h.fail(h.pop(old), "plugin")
    h.clock.advance(100)
    h.queue.add(young)
    h.fail(h.pop(young), "plugin")
    assert h.queue.pending_counts()["unschedulable"] == 2
    h.clock.advance(200)  # old has waited exactly 300 s
    h.queue.flush_unschedulable_leftover()
    assert h.where(old) == "unschedulable"
    h.clock.advance(0.5)
    h.queue.flush_unschedulable_leftover()
    assert h.where(old) == "active"
    assert h.where(young) == "unschedulable"
    assert (
        h.metrics.counter(m.QUEUE_INCOMING_PODS, queue="active", event="UnschedulableTimeout") == 1
    )


def test_unschedulable_flush_sends_backing_off_pod_to_backoff() -> None:
    h = make_queue(pod_max_in_unschedulable=0.5)
    pod = _pod("p")
    h.queue.add(pod)
    h.fail(h.pop(pod), "plugin")
    h.clock.advance(0.6)
    h.queue.flush_unschedulable_leftover()
    assert h.where(pod) == "backoff"


# Events and queueing hints --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("pending", "hint", "wait", "expected"),
    [
        pytest.param(True, queue_hint, 0.0, "active", id="pending-queue-to-active"),
        pytest.param(False, queue_hint, 0.0, "backoff", id="queue-while-backing-off"),
        pytest.param(False, queue_hint, 2.0, "active", id="queue-after-backoff-ended"),
        pytest.param(False, queue_hint, 1.0, "backoff", id="queue-in-expiry-window"),
        pytest.param(False, skip_hint, 0.0, "unschedulable", id="skip-stays"),
    ],
)
def test_event_requeue_with_hints(pending: bool, hint: HintFn, wait: float, expected: str) -> None:
    """Upstream TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint."""
    h = make_queue([_plugin("foo", NODE_ADD, hint=hint)], start=1000.0)
    pod = _pod("pod1")
    h.queue.add(pod)
    info = h.pop(pod)
    if pending:
        h.fail(info, pending=["foo"])
    else:
        h.fail(info, "foo")
    assert h.where(pod) == "unschedulable"
    h.clock.advance(wait)
    h.wakeups.clear()
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, make_node("n").node())
    assert h.where(pod) == expected
    assert bool(h.wakeups) == (expected != "unschedulable")
    if expected != "unschedulable":
        assert h.metrics.counter(m.QUEUE_INCOMING_PODS, queue=expected, event="NodeAdd") == 1


def test_move_all_with_pre_check_and_uninteresting_events() -> None:
    h = make_queue([_plugin("fit", ASSIGNED_POD_DELETE)])
    low, high = _pod("low", 1), _pod("high", 10)
    for pod in (low, high):
        h.queue.add(pod)
    for info in (h.pop(), h.pop()):
        h.fail(info, "fit")
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)  # nobody registered it
    assert h.queue.move_request_cycle == -1
    assert h.queue.pending_counts()["unschedulable"] == 2
    h.queue.move_all_to_active_or_backoff_queue(
        ASSIGNED_POD_DELETE, _pod("victim", 5), None, priority_at_most(5)
    )
    assert h.where(low) == "backoff"
    assert h.where(high) == "unschedulable"
    assert h.queue.move_request_cycle == h.queue.scheduling_cycle == 2


def test_assigned_pod_events() -> None:
    h = make_queue(
        [
            _plugin("affinity", ASSIGNED_POD_ADD),
            _plugin(
                "labels", ClusterEvent(EventResource.ASSIGNED_POD, ActionType.UPDATE_POD_LABEL)
            ),
        ]
    )
    a, b = _pod("a"), _pod("b")
    for pod in (a, b):
        h.queue.add(pod)
    h.fail(h.pop(a), "affinity")
    h.fail(h.pop(b), "labels")
    bound = make_pod("bound").node("n1").label("app", "x").pod()
    h.queue.assigned_pod_updated(bound, make_pod("bound").node("n1").label("app", "x").pod())
    assert (h.where(a), h.where(b)) == ("unschedulable", "unschedulable")
    h.queue.assigned_pod_updated(bound, make_pod("bound").node("n1").label("app", "y").pod())
    assert h.where(b) == "backoff"
    h.queue.assigned_pod_added(bound)
    assert h.where(a) == "backoff"


# In-flight events (upstream Test_InFlightPods) ------------------------------------------------

P1, P2, P3 = _pod("targetpod"), _pod("targetpod2"), _pod("targetpod3")
FOO_ALL = {"fooPlugin1": [PDB_ADD, NODE_ADD, NAMESPACE_ADD, NODE_LABEL_UPDATE]}


def _profile_plugins(
    spec: dict[str, list[tuple[ClusterEvent, HintFn]] | list[ClusterEvent]],
) -> list[EventsPlugin]:
    plugins = []
    for name, events in spec.items():
        regs = [
            registration(*item) if isinstance(item, tuple) else registration(item)
            for item in events
        ]
        plugins.append(EventsPlugin(name, regs))
    return plugins


@pytest.mark.parametrize(
    ("plugins", "initial", "actions", "in_flight", "events", "active", "backoff", "unschedulable"),
    [
        pytest.param(
            {"fooPlugin1": [PDB_ADD]},
            [P1],
            [("event", NAMESPACE_ADD), ("pop", P1), ("event", PDB_ADD), ("event", PDB_UPDATE)],
            [P1],
            [PDB_ADD],
            [],
            [],
            [],
            id="interested-events-recorded-while-in-flight",
        ),
        pytest.param(
            FOO_ALL,
            [P1, P2],
            [
                ("event", NAMESPACE_ADD),
                ("pop", P1),
                ("event", PDB_ADD),
                ("pop", P2),
                ("event", NODE_ADD),
                ("fail", P1, (), ()),
            ],
            [P2],
            [NODE_ADD],
            [],
            [P1],
            [],
            id="requeued-pod-releases-its-events",
        ),
        pytest.param(
            FOO_ALL,
            [P1, P2],
            [
                ("event", NAMESPACE_ADD),
                ("pop", P1),
                ("event", PDB_ADD),
                ("pop", P2),
                ("event", NODE_ADD),
                ("fail", P1, (), ()),
                ("event", NODE_LABEL_UPDATE),
                ("fail", P2, (), ()),
            ],
            [],
            [],
            [],
            [P1, P2],
            [],
            id="all-requeued-nothing-kept",
        ),
        pytest.param(
            {"fooPlugin1": [PDB_ADD, NODE_ADD, ASSIGNED_POD_ADD]},
            [P1, P2, P3],
            [
                ("event", NAMESPACE_ADD),
                ("pop", P1),
                ("event", PDB_ADD),
                ("pop", P2),
                ("event", NODE_ADD),
                ("pop", P3),
                ("event", ASSIGNED_POD_ADD),
                ("fail", P2, (), ()),
            ],
            [P1, P3],
            [PDB_ADD, NODE_ADD, ASSIGNED_POD_ADD],
            [],
            [P2],
            [],
            id="intermediate-pod-requeued-keeps-older-events",
        ),
        pytest.param(
            {"fooPlugin1": [(ASSIGNED_POD_ADD, skip_hint)]},
            [P1],
            [
                ("event", UNSCHEDULABLE_TIMEOUT),
                ("pop", P1),
                ("event", ASSIGNED_POD_ADD),
                ("fail", P1, ("fooPlugin1",), ()),
            ],
            [],
            [],
            [],
            [],
            [P1],
            id="events-before-pop-ignored",
        ),
        pytest.param(
            {"fooPlugin1": [ASSIGNED_POD_ADD]},
            [P1],
            [("pop", P1), ("event", ASSIGNED_POD_ADD), ("fail", P1, (), ())],
            [],
            [],
            [],
            [P1],
            [],
            id="no-failed-plugin-goes-to-backoff",
        ),
        pytest.param(
            {"fooPlugin1": [ASSIGNED_POD_ADD]},
            [P1],
            [("pop", P1), ("event", NODE_ADD), ("fail", P1, ("fooPlugin1",), ())],
            [],
            [],
            [],
            [],
            [P1],
            id="no-relevant-event-stays-unschedulable",
        ),
        pytest.param(
            {"fooPlugin1": [(ASSIGNED_POD_ADD, skip_hint)]},
            [P1],
            [("pop", P1), ("event", ASSIGNED_POD_ADD), ("fail", P1, ("fooPlugin1",), ())],
            [],
            [],
            [],
            [],
            [P1],
            id="failed-plugin-hint-skips",
        ),
        pytest.param(
            {
                "fooPlugin3": [(ASSIGNED_POD_ADD, skip_hint)],
                "fooPlugin2": [(ASSIGNED_POD_ADD, queue_hint)],
                "fooPlugin1": [(ASSIGNED_POD_ADD, queue_hint)],
            },
            [P1],
            [
                ("pop", P1),
                ("event", ASSIGNED_POD_ADD),
                ("fail", P1, ("fooPlugin2", "fooPlugin3"), ("fooPlugin1",)),
            ],
            [],
            [],
            [P1],
            [],
            [],
            id="pending-plugin-queue-goes-to-active",
        ),
        pytest.param(
            {
                "fooPlugin2": [(ASSIGNED_POD_ADD, skip_hint)],
                "fooPlugin1": [(ASSIGNED_POD_ADD, queue_hint)],
            },
            [P1],
            [
                ("pop", P1),
                ("event", ASSIGNED_POD_ADD),
                ("fail", P1, ("fooPlugin1", "fooPlugin2"), ()),
            ],
            [],
            [],
            [],
            [P1],
            [],
            id="failed-plugin-queue-goes-to-backoff",
        ),
        pytest.param(
            {
                "fooPlugin3": [(ASSIGNED_POD_ADD, skip_hint)],
                "fooPlugin2": [(ASSIGNED_POD_ADD, queue_hint)],
                "fooPlugin1": [(ASSIGNED_POD_ADD, queue_hint)],
            },
            [P1, P2],
            [
                ("pop", P1),
                ("event", NODE_ADD),
                ("pop", P2),
                ("event", ASSIGNED_POD_ADD),
                ("fail", P1, (), ()),
                ("fail", P2, ("fooPlugin2", "fooPlugin3"), ("fooPlugin1",)),
            ],
            [],
            [],
            [P2],
            [P1],
            [],
            id="event-seen-while-another-pod-in-flight",
        ),
    ],
)
def test_in_flight_event_replay(
    plugins: dict[str, Any],
    initial: list[Pod],
    actions: list[tuple[Any, ...]],
    in_flight: list[Pod],
    events: list[ClusterEvent],
    active: list[Pod],
    backoff: list[Pod],
    unschedulable: list[Pod],
) -> None:
    h = make_queue(_profile_plugins(plugins))
    for pod in initial:
        h.queue.add(pod)
        h.clock.advance(1)
    popped: dict[str, QueuedPodInfo] = {}
    for action in actions:
        if action[0] == "pop":
            popped[action[1].name] = h.pop(action[1])
        elif action[0] == "event":
            h.queue.move_all_to_active_or_backoff_queue(action[1])
        else:
            _, pod, rejected, pending = action
            assert h.fail(popped[pod.name], *rejected, pending=pending)
    assert _names(h.queue.in_flight_pods()) == _names(in_flight)
    assert [recorded.event for recorded in h.queue.in_flight_events()] == events
    assert _names(h.queue.active_pods()) == _names(active)
    assert _names(h.queue.backoff_pods()) == _names(backoff)
    assert _names(h.queue.unschedulable_pods()) == _names(unschedulable)


def test_move_request_during_attempts_sends_failures_to_backoff() -> None:
    """Upstream TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff, with queueing hints."""
    h = make_queue()
    pods = [_pod(f"pod{i}", i, f"ns{i}") for i in range(10)]
    for pod in pods:
        h.queue.add(pod)
    popped = [h.pop(pods[i]) for i in range(9, 0, -1)]
    h.queue.move_all_to_active_or_backoff_queue(UNSCHEDULABLE_TIMEOUT)
    old_cycle = h.queue.scheduling_cycle
    assert h.queue.move_request_cycle == old_cycle == 9
    h.pop(pods[0])
    for info in popped:
        info.unschedulable_plugins = {"plugin"}
        assert h.queue.add_unschedulable_if_not_present(info, old_cycle)
    assert all(h.where(pod) == "backoff" for pod in pods[1:])


def test_failure_after_done_goes_to_backoff() -> None:
    """A binding-cycle failure comes after ``done``: no event history, so retry after backoff."""
    h = make_queue([_plugin("plugin", NODE_ADD, hint=skip_hint)])
    pod = _pod("p")
    h.queue.add(pod)
    info = h.pop(pod)
    h.queue.done(pod.uid)
    assert h.fail(info, "plugin")
    assert h.where(pod) == "backoff"


def test_add_unschedulable_if_already_queued() -> None:
    h = make_queue()
    pod = _pod("p")
    h.queue.add(pod)
    info = h.pop(pod)
    h.queue.add(pod)
    assert not h.fail(info, "plugin")
    assert h.where(pod) == "active"
    assert not h.queue.is_in_flight(pod.uid)
    assert info.unschedulable_count == 0


# PreEnqueue gating ----------------------------------------------------------------------------


def _recording_hint(calls: list[str]) -> HintFn:
    def hint(pod: Pod, old: Any, new: Any) -> Any:
        calls.append(pod.name)
        return queue_hint(pod, old, new)

    return hint


def test_scheduling_gates_hold_pod_until_gates_removed() -> None:
    calls: list[str] = []
    h = make_queue([SchedulingGates(), _plugin("foo", NODE_ADD, hint=_recording_hint(calls))])
    gated = make_pod("g").uid("uid-g").gate("example.com/wait").label("app", "a").pod()
    h.queue.add(gated)
    assert h.where(gated) == "gated"
    assert h.wakeups == []
    assert h.queue.pending_counts() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 1}
    info = h.queue.get(gated.key)
    assert info is not None
    assert (info.gating_plugin, info.unschedulable_plugins) == (
        "SchedulingGates",
        {"SchedulingGates"},
    )
    assert (
        h.metrics.counter(m.QUEUE_INCOMING_PODS, queue="unschedulable", event="UnschedulablePodAdd")
        == 1
    )
    assert h.queue.pop() is None
    # Events the gating plugin did not register never reach the pod's hints.
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    h.clock.advance(301)
    h.queue.flush_unschedulable_leftover()
    assert calls == []
    assert h.where(gated) == "gated"
    # An update that keeps the gates leaves it where it is.
    relabelled = make_pod("g").uid("uid-g").gate("example.com/wait").label("app", "b").pod()
    h.queue.update(gated, relabelled)
    assert h.where(gated) == "gated"
    # Removing the gates releases it straight to activeQ (it was never tried).
    released = make_pod("g").uid("uid-g").label("app", "b").pod()
    h.queue.update(relabelled, released)
    assert h.where(gated) == "active"
    assert h.wakeups
    assert h.pop().pod is released


def test_gating_plugin_events_recheck_the_gate() -> None:
    """Only events the gating plugin registered re-run PreEnqueue for a gated pod."""
    gate = AllowListPreEnqueue("foo", {"foo"}, [registration(NODE_ADD)])
    h = make_queue([gate])
    pod = make_pod("p").uid("uid-p").pod()
    h.queue.add(pod)
    assert h.where(pod) == "gated"
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert h.where(pod) == "gated"  # re-checked, still refused
    assert gate.calls == 2
    allowed = make_pod("p").uid("uid-p").label("foo", "bar").pod()
    h.queue.update(pod, allowed)  # a label update: not an event "foo" registered
    assert h.where(pod) == "gated"
    assert gate.calls == 2
    h.queue.move_all_to_active_or_backoff_queue(PDB_ADD)  # nobody registered it
    assert h.where(pod) == "gated"
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert h.where(pod) == "active"
    assert gate.calls == 3


def test_async_preemption_gate() -> None:
    """A preemptor waits gated while its preemption runs; the last victim's deletion frees it."""
    preemption = SwitchGate(
        "DefaultPreemption", closed=False, events=[registration(ASSIGNED_POD_DELETE, skip_hint)]
    )
    h = make_queue([preemption, _plugin("NodeResourcesFit", ASSIGNED_POD_DELETE, NODE_ADD)])
    pod = _pod("preemptor", 100)
    h.queue.add(pod)
    info = h.pop(pod)
    preemption.closed = True  # PostFilter started deleting victims
    h.fail(info, "NodeResourcesFit")
    assert h.where(pod) == "unschedulable"
    victim = make_pod("victim").node("n1").pod()
    h.queue.assigned_pod_deleted(victim)  # first victim gone: Fit says Queue, the gate says wait
    assert h.where(pod) == "gated"
    assert info.unschedulable_plugins == {"NodeResourcesFit", "DefaultPreemption"}
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)  # not an event the gate registered
    assert h.where(pod) == "gated"
    h.queue.assigned_pod_deleted(victim)  # still running
    assert h.where(pod) == "gated"
    preemption.closed = False
    h.queue.assigned_pod_deleted(victim)  # last victim gone
    assert h.where(pod) == "backoff"
    assert h.pop().pod is pod  # PopFromBackoffQ: the loop need not wait for the backoff


def test_activate_releases_pod_after_failed_preemption() -> None:
    preemption = SwitchGate(
        "DefaultPreemption", events=[registration(ASSIGNED_POD_DELETE, skip_hint)]
    )
    h = make_queue([preemption])
    pod = _pod("p")
    h.queue.add(pod)
    assert h.where(pod) == "gated"
    h.queue.activate([pod])
    assert h.where(pod) == "gated"  # PreEnqueue re-run, still refused
    preemption.closed = False
    h.queue.activate([pod])
    assert h.where(pod) == "active"
    assert h.metrics.counter(m.QUEUE_INCOMING_PODS, queue="active", event="ForceActivate") == 1


@pytest.mark.parametrize(
    ("allow_lists", "labels", "gated"),
    [
        pytest.param([], {"p": ""}, False, id="no-plugins"),
        pytest.param([set(), set()], {"p": ""}, True, id="refused-by-all"),
        pytest.param([{"foo", "bar"}, {"foo"}], {"bar": ""}, True, id="refused-by-second"),
        pytest.param([{"foo", "bar"}, {"bar"}], {"bar": ""}, False, id="passes-all"),
    ],
)
def test_pre_enqueue_on_add(
    allow_lists: list[set[str]], labels: dict[str, str], gated: bool
) -> None:
    """Upstream TestPriorityQueue_moveToActiveQ (add path)."""
    plugins = [AllowListPreEnqueue(f"gate{i}", allow) for i, allow in enumerate(allow_lists)]
    h = make_queue(plugins)
    pod = make_pod("p").uid("uid-p").labels(**labels).pod()
    h.queue.add(pod)
    assert h.where(pod) == ("gated" if gated else "active")
    # A later plain update keeps a gated pod gated.
    h.queue.update(pod, make_pod("p").uid("uid-p").labels(**labels).image("other").pod())
    assert h.where(pod) == ("gated" if gated else "active")


def test_pods_leaving_backoff_skip_pre_enqueue() -> None:
    """With PopFromBackoffQ, PreEnqueue runs on entering backoffQ, not on leaving it."""
    gate = AllowListPreEnqueue("gate", {"ok"})
    h = make_queue([gate])
    a = make_pod("a").uid("uid-a").label("ok", "").pod()
    b = make_pod("b").uid("uid-b").label("ok", "").pod()
    for pod in (a, b):
        h.queue.add(pod)
    h.fail(h.pop(a))
    h.fail(h.pop(b))
    assert gate.calls == 4
    gate.allow = set()
    h.clock.advance(5)
    h.queue.activate([a])
    h.queue.flush_backoff_completed()
    assert (h.where(a), h.where(b)) == ("active", "active")
    assert gate.calls == 4


def test_gated_on_entering_backoff() -> None:
    """Upstream TestPriorityQueue_moveToBackoffQ: PreEnqueue refuses the pod -> unschedulable."""
    gate = AllowListPreEnqueue("gate", {"ok"})
    h = make_queue([gate])
    pod = make_pod("p").uid("uid-p").label("ok", "").pod()
    h.queue.add(pod)
    info = h.pop(pod)
    gate.allow = set()
    h.fail(info)
    assert h.where(pod) == "gated"
    assert info.gating_plugin == "gate"


# Update ---------------------------------------------------------------------------------------

QUEUE_ON_UPDATE = [
    _plugin("queuePlugin", UNSCHEDULED_POD_UPDATE),
    _plugin("skipPlugin", UNSCHEDULED_POD_UPDATE, hint=skip_hint),
]


def _updated(pod: Pod) -> Pod:
    return make_pod(pod.name, pod.namespace).uid(pod.uid).priority(pod.priority).image("new").pod()


def _in_unschedulable(h: Harness, pod: Pod, plugin: str) -> QueuedPodInfo:
    h.queue.add(pod)
    info = h.pop(pod)
    h.fail(info, plugin)
    assert h.where(pod) == "unschedulable"
    return info


@pytest.mark.parametrize(
    ("prepare", "expected"),
    [
        pytest.param("nothing", "active", id="not-in-any-queue"),
        pytest.param("active", "active", id="in-active-stays"),
        pytest.param("backoff", "backoff", id="in-backoff-stays"),
        pytest.param("unschedulable-backing-off", "backoff", id="unschedulable-to-backoff"),
        pytest.param("unschedulable-backoff-over", "active", id="unschedulable-to-active"),
        pytest.param("unschedulable-skip", "unschedulable", id="hint-skip-stays"),
        pytest.param("in-flight", "in-flight", id="in-flight-not-queued"),
    ],
)
def test_update(prepare: str, expected: str) -> None:
    """Upstream TestPriorityQueue_Update."""
    h = make_queue(QUEUE_ON_UPDATE)
    pod = _pod("mpp", 500)
    if prepare == "active":
        h.queue.add(pod)
    elif prepare == "backoff":
        h.queue.add(pod)
        h.fail(h.pop(pod))
    elif prepare.startswith("unschedulable"):
        plugin = "skipPlugin" if prepare.endswith("skip") else "queuePlugin"
        _in_unschedulable(h, pod, plugin)
        if prepare.endswith("over"):
            h.clock.advance(10)
    elif prepare == "in-flight":
        h.queue.add(pod)
        h.pop(pod)
    new = _updated(pod)
    h.queue.update(pod, new)
    assert h.where(pod) == expected
    info = h.queue.get(pod.key)
    if expected == "in-flight":
        assert info is None
    else:
        assert info is not None
        assert info.pod is new


def test_update_while_in_flight_is_replayed_on_failure() -> None:
    """Upstream TestPriorityQueue_UpdateWhenInflight."""
    h = make_queue(
        [_plugin("fakePlugin", ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE))]
    )
    pod = make_pod("test-pod", "test-ns").uid("test-uid").pod()
    h.queue.add(pod)
    info = h.pop(pod)
    updated = (
        make_pod("test-pod", "test-ns")
        .uid("test-uid")
        .toleration("foo", "", "NoSchedule", "Exists")
        .pod()
    )
    h.queue.update(pod, updated)
    assert [recorded.event.name for recorded in h.queue.in_flight_events()] == [
        "UnschedulablePodUpdatePodToleration"
    ]
    info.pod = updated  # the failure handler puts the fresh object back
    h.fail(info, "fakePlugin")
    assert h.where(pod) == "backoff"
    assert h.queue.get(pod.key) is info
    assert info.pod is updated


# Delete ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "where", ["active", "backoff", "unschedulable", "gated", "in-flight", "nowhere"]
)
def test_delete(where: str) -> None:
    gate = SwitchGate("gate", closed=where == "gated")
    h = make_queue([gate])
    pod = _pod("p")
    if where != "nowhere":
        h.queue.add(pod)
    if where in ("backoff", "unschedulable", "in-flight"):
        info = h.pop(pod)
        if where == "backoff":
            h.fail(info)
        elif where == "unschedulable":
            h.fail(info, "plugin")
    assert h.where(pod) == (None if where == "nowhere" else where)
    h.queue.delete(pod)
    assert h.where(pod) == ("in-flight" if where == "in-flight" else None)
    assert h.queue.pending_pods() == []
    assert sum(h.queue.pending_counts().values()) == 0


# Activate -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "active_after"),
    [
        pytest.param("active", 1, id="already-active"),
        pytest.param("nowhere", 0, id="unknown-pod-ignored"),
        pytest.param("unschedulable", 1, id="from-unschedulable"),
        pytest.param("backoff", 1, id="from-backoff"),
    ],
)
def test_activate(where: str, active_after: int) -> None:
    """Upstream TestPriorityQueue_Activate."""
    h = make_queue()
    pod = _pod("hpp", 1000)
    if where != "nowhere":
        h.queue.add(pod)
    if where in ("unschedulable", "backoff"):
        info = h.pop(pod)
        h.fail(info, *(["plugin"] if where == "unschedulable" else []))
        assert h.where(pod) == where
    h.queue.activate([pod])
    assert h.queue.pending_counts()["active"] == active_after
    assert h.where(pod) == ("active" if active_after else None)


@pytest.mark.parametrize("same_pod", [True, False])
def test_activate_in_flight_pod_records_force_activate(same_pod: bool) -> None:
    h = make_queue()
    target, other = _pod("hpp", 1000), _pod("mpp", 500)
    h.queue.add(target if same_pod else other)
    info = h.pop()
    h.queue.activate([target])
    assert h.queue.move_request_cycle == 1
    events = h.queue.in_flight_events()
    if same_pod:
        assert [(e.event, e.old, e.new) for e in events] == [(FORCE_ACTIVATE, None, target)]
        h.fail(info, "plugin")  # the recorded ForceActivate requeues it despite the rejection
        assert h.where(target) == "backoff"
    else:
        assert events == []


# Introspection, metrics, profiles -------------------------------------------------------------


def test_pending_pods_counts_and_gauges() -> None:
    gate = SwitchGate("gate", closed=False)
    h = make_queue([gate])
    active, backoff, unschedulable, gated, flying = (_pod(n) for n in ("a", "b", "u", "g", "f"))
    for pod in (backoff, unschedulable, flying):
        h.queue.add(pod)
    h.fail(h.pop(backoff))
    h.fail(h.pop(unschedulable), "plugin")
    h.pop(flying)
    h.queue.add(active)
    gate.closed = True
    h.queue.add(gated)
    assert _names(h.queue.pending_pods()) == ["a", "b", "g", "u"]
    counts = {"active": 1, "backoff": 1, "unschedulable": 1, "gated": 1}
    assert h.queue.pending_counts() == counts
    h.queue.record_pending_pods()
    for queue, count in counts.items():
        assert h.metrics.gauge(m.PENDING_PODS, queue=queue) == count
    assert (
        h.metrics.gauge(
            "scheduler_unschedulable_pods", plugin="plugin", profile="default-scheduler"
        )
        == 1
    )
    assert (
        h.metrics.gauge("scheduler_unschedulable_pods", plugin="gate", profile="default-scheduler")
        == 1
    )
    assert (
        h.metrics.counter(m.QUEUE_INCOMING_PODS, queue="backoff", event="ScheduleAttemptFailure")
        == 1
    )
    assert (
        h.metrics.counter(
            m.QUEUE_INCOMING_PODS, queue="unschedulable", event="ScheduleAttemptFailure"
        )
        == 1
    )
    assert (
        h.metrics.counter(m.QUEUE_INCOMING_PODS, queue="active", event="UnschedulablePodAdd") == 4
    )


def test_profiles_use_their_own_pre_enqueue_and_hints() -> None:
    h = make_queue(
        [],
        extra_profiles={
            "other": [AllowListPreEnqueue("gate", {"ok"}), _plugin("X", NODE_ADD)],
        },
    )
    mine = _pod("mine")
    theirs = make_pod("theirs").uid("uid-theirs").scheduler("other").pod()
    theirs_ok = make_pod("ok").uid("uid-ok").scheduler("other").label("ok", "").pod()
    for pod in (mine, theirs, theirs_ok):
        h.queue.add(pod)
    assert (h.where(mine), h.where(theirs), h.where(theirs_ok)) == ("active", "gated", "active")
    h.fail(h.pop(mine), "X")  # X is not a plugin of the default profile
    h.fail(h.pop(theirs_ok), "X")
    h.clock.advance(5)
    h.queue.move_all_to_active_or_backoff_queue(NODE_ADD)
    assert h.where(mine) == "unschedulable"
    assert h.where(theirs_ok) == "active"


def test_needs_a_profile() -> None:
    with pytest.raises(ValueError, match="at least one profile"):
        SchedulingQueue({}, now=lambda: 0.0)
