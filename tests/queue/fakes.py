"""Small fakes for queue tests: a settable clock, plugins with fixed hints, metrics that remember.

Profiles are real :class:`Framework` objects (PrioritySort + the given plugins), so the queue is
exercised through the same interface the scheduler uses.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
    HintFn,
    QueueingHint,
)
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.runtime import Framework, ProfilePlugins
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.framework.types import QueuedPodInfo
from kopf_scheduler.model.pod import DEFAULT_SCHEDULER_NAME, Pod
from kopf_scheduler.plugins.priority_sort import PrioritySort
from kopf_scheduler.queue import SchedulingQueue
from tests.clock import FakeClock

# Stand-ins for events of resources the model has no kind for (upstream tests use PV/PVC/CSINode).
PDB_ADD = ClusterEvent(EventResource.POD_DISRUPTION_BUDGET, ActionType.ADD, "PDBAdd")
PDB_UPDATE = ClusterEvent(
    EventResource.POD_DISRUPTION_BUDGET, ActionType.UPDATE_GENERIC, "PDBUpdate"
)
NAMESPACE_ADD = ClusterEvent(EventResource.NAMESPACE, ActionType.ADD, "NamespaceAdd")
NODE_LABEL_UPDATE = ClusterEvent(EventResource.NODE, ActionType.UPDATE_NODE_LABEL, "NodeLabel")


def queue_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE


def skip_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    return QueueingHint.QUEUE_SKIP


def failing_hint(pod: Pod, old: Any, new: Any) -> QueueingHint:
    raise RuntimeError("hint failed")


@dataclass
class EventsPlugin:
    """A plugin that only registers events (as a Filter plugin would)."""

    name: str
    events: list[ClusterEventWithHint] = field(default_factory=list)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return list(self.events)


@dataclass
class AllowListPreEnqueue:
    """Admits pods carrying one of ``allow`` as a label key (upstream's test preEnqueuePlugin)."""

    name: str
    allow: set[str] = field(default_factory=set)
    events: list[ClusterEventWithHint] = field(default_factory=list)
    calls: int = 0

    def pre_enqueue(self, pod: Pod) -> Status:
        self.calls += 1
        if any(key in self.allow for key in pod.labels):
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "pod name not in allowlists")

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return list(self.events)


@dataclass
class SwitchGate:
    """Gates every pod while ``closed`` (like DefaultPreemption while a preemption runs)."""

    name: str
    closed: bool = True
    events: list[ClusterEventWithHint] = field(default_factory=list)

    def pre_enqueue(self, pod: Pod) -> Status:
        if self.closed:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, "waiting")
        return SUCCESS

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return list(self.events)


class RecordingMetrics:
    def __init__(self) -> None:
        self.counters: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self.gauges: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
        self.observations: dict[tuple[str, tuple[tuple[str, str], ...]], list[float]] = {}

    @staticmethod
    def _key(
        name: str, labels: Mapping[str, str] | None
    ) -> tuple[str, tuple[tuple[str, str], ...]]:
        return name, tuple(sorted((labels or {}).items()))

    def inc(self, name: str, labels: Mapping[str, str] | None = None, value: float = 1) -> None:
        key = self._key(name, labels)
        self.counters[key] = self.counters.get(key, 0) + value

    def observe(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        self.observations.setdefault(self._key(name, labels), []).append(value)

    def set(self, name: str, value: float, labels: Mapping[str, str] | None = None) -> None:
        self.gauges[self._key(name, labels)] = value

    def observed(self, name: str, **labels: str) -> list[float]:
        return self.observations.get(self._key(name, labels), [])

    def counter(self, name: str, **labels: str) -> float:
        return self.counters.get(self._key(name, labels), 0)

    def gauge(self, name: str, **labels: str) -> float | None:
        return self.gauges.get(self._key(name, labels))


def registration(event: ClusterEvent, hint: HintFn | None = queue_hint) -> ClusterEventWithHint:
    return ClusterEventWithHint(event, hint)


def make_profile(
    plugins: Iterable[Any] = (), scheduler_name: str = DEFAULT_SCHEDULER_NAME
) -> Framework:
    """A profile with PrioritySort and ``plugins``; those with ``pre_enqueue`` gate in order."""
    plugin_list = list(plugins)
    sort = PrioritySort()
    profile_plugins = ProfilePlugins(
        queue_sort=sort,
        pre_enqueue=[p for p in plugin_list if hasattr(p, "pre_enqueue")],
        all=[sort, *plugin_list],
    )
    return Framework(scheduler_name, profile_plugins, Handle(scheduler_name=scheduler_name))


@dataclass
class Harness:
    queue: SchedulingQueue
    clock: FakeClock
    metrics: RecordingMetrics
    wakeups: list[float]
    pods: dict[str, Pod]
    """The watch cache the nominator consults (key → pod)."""

    def fail(
        self,
        info: QueuedPodInfo,
        *plugins: str,
        pending: Iterable[str] = (),
    ) -> bool:
        """End the attempt on ``info`` as rejected by ``plugins`` (an error when none)."""
        info.unschedulable_plugins = set(plugins)
        info.pending_plugins = set(pending)
        return self.queue.add_unschedulable_if_not_present(info, self.queue.scheduling_cycle)

    def pop(self, expected: Pod | None = None) -> QueuedPodInfo:
        info = self.queue.pop()
        assert info is not None, "expected a pod to pop"
        if expected is not None:
            assert info.pod.key == expected.key, f"popped {info.pod.key}, expected {expected.key}"
        return info

    def where(self, pod: Pod) -> str | None:
        return self.queue.location(pod)


def make_queue(
    plugins: Iterable[Any] = (),
    *,
    start: float = 1000.0,
    extra_profiles: Mapping[str, Iterable[Any]] | None = None,
    watch: Iterable[Pod] | None = None,
    **kwargs: Any,
) -> Harness:
    """A queue over one default profile (plus ``extra_profiles``) on a fake clock.

    ``watch`` seeds the watch cache the nominator checks; without it the check is off.
    """
    clock = FakeClock(start)
    metrics = RecordingMetrics()
    wakeups: list[float] = []
    profiles: dict[str, Framework] = {DEFAULT_SCHEDULER_NAME: make_profile(plugins)}
    for name, extra in (extra_profiles or {}).items():
        profiles[name] = make_profile(extra, name)
    pods: dict[str, Pod] = {pod.key: pod for pod in watch or ()}
    get_pod: Callable[[str], Pod | None] | None = pods.get if watch is not None else None
    queue = SchedulingQueue(
        profiles,
        now=clock,
        on_activity=lambda: wakeups.append(clock.t),
        get_pod=get_pod,
        metrics=metrics,
        **kwargs,
    )
    return Harness(queue, clock, metrics, wakeups, pods)
