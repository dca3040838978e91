"""The scheduling queue: where every pending pod waits, and the rules that move it between waits.

Behaviour is kube-scheduler v1.34's ``PriorityQueue`` with QueueingHints on,
SchedulerPopFromBackoffQ on and PreEnqueue gating (which async preemption relies on):

- activeQ (:mod:`.active`) holds pods ready to try; backoffQ (:mod:`.backoff`) pods that failed
  recently; unschedulablePods (:mod:`.unschedulable`) pods waiting for an event, including those
  a PreEnqueue plugin holds back. Popped pods are "in flight" (:mod:`.in_flight`) until ``done``.
- A failed pod goes back according to the queueing hints (:mod:`.hints`) of the plugins that
  rejected it, replaying the events that arrived while it was being tried.
- A pod entering activeQ or backoffQ first passes the profile's PreEnqueue plugins; a pod that
  does not is parked as gated, and only events its gating plugin registered look at it again.
- ``pop`` takes the head of activeQ; if activeQ is empty it takes the head of the
  rejected-by-plugin backoff heap even before its backoff ends, so the loop never idles while
  work exists.

Everything is synchronous and single-threaded: time comes from ``now``; the caller runs
:meth:`SchedulingQueue.flush_backoff_completed` every second (on whole seconds) and
:meth:`SchedulingQueue.flush_unschedulable_leftover` every 30 s, and waits for ``on_activity``,
which is called whenever a pod may have become poppable. ``pop`` never blocks; it returns
``None`` when there is nothing to pop.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

from kopf_scheduler import metric_names as m
from kopf_scheduler.framework.events import (
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    BACKOFF_COMPLETE,
    FORCE_ACTIVATE,
    POP_FROM_BACKOFF,
    UNSCHEDULABLE_TIMEOUT,
    UNSCHEDULED_POD_ADD,
    UNSCHEDULED_POD_UPDATE,
    ClusterEvent,
    ClusterEventWithHint,
)
from kopf_scheduler.framework.status import Status
from kopf_scheduler.framework.types import NominatingInfo, QueuedPodInfo
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import Metrics, NullMetrics
from kopf_scheduler.queue.active import ActiveQueue
from kopf_scheduler.queue.backoff import (
    DEFAULT_POD_INITIAL_BACKOFF,
    DEFAULT_POD_MAX_BACKOFF,
    BackoffQueue,
)
from kopf_scheduler.queue.hints import HintRegistry, QueueingStrategy
from kopf_scheduler.queue.in_flight import InFlight, RecordedEvent
from kopf_scheduler.queue.nominator import Nominator
from kopf_scheduler.queue.pod_events import pod_update_events
from kopf_scheduler.queue.unschedulable import UnschedulablePods

DEFAULT_POD_MAX_IN_UNSCHEDULABLE = 5 * 60.0
"""How long a pod may wait in unschedulablePods before the periodic flush retries it anyway."""
BACKOFF_FLUSH_INTERVAL = 1.0
UNSCHEDULABLE_FLUSH_INTERVAL = 30.0

SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in-flight"

PreEnqueueCheck = Callable[[Pod], bool]
"""A filter on the unschedulable pods a move request considers (``True`` = consider it)."""


class QueueProfile(Protocol):
    """What the queue needs from a profile; :class:`~kopf_scheduler.framework.runtime.Framework`."""

    def queue_sort_less(self) -> Callable[[QueuedPodInfo, QueuedPodInfo], bool]: ...

    def run_pre_enqueue(self, pod: Pod) -> Status: ...

    def events_to_register(self) -> Mapping[str, Sequence[ClusterEventWithHint]]: ...


def priority_at_most(priority: int) -> PreEnqueueCheck:
    """A pre-check selecting pods whose priority is ≤ ``priority`` (a freed nomination)."""
    return lambda pod: pod.priority <= priority


class SchedulingQueue:
    """The pending pods of one scheduler, across all of its profiles."""

    def __init__(
        self,
        profiles: Mapping[str, QueueProfile],
        *,
        now: Callable[[], float],
        on_activity: Callable[[], None] | None = None,
        get_pod: Callable[[str], Pod | None] | None = None,
        metrics: Metrics | None = None,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE,
        nominator: Nominator | None = None,
    ) -> None:
        """Create an empty queue.

        ``profiles`` maps ``schedulerName`` to its profile; the first profile's QueueSort orders
        the queue (kube-scheduler requires all profiles to share it). ``get_pod`` looks a pod
        up in the watch cache by ``namespace/name``; the nominator uses it to refuse nominating
        deleted or bound pods. ``on_activity`` is called when a pod may have become poppable.
        Durations are in seconds. ``nominator`` is the one the profiles' handles were given
        (built before the queue, since the plugins the queue runs need it); by default the queue
        makes its own.
        """
        if not profiles:
            raise ValueError("the scheduling queue needs at least one profile")
        self._profiles: dict[str, QueueProfile] = dict(profiles)
        self._now = now
        self._on_activity = on_activity
        self._metrics: Metrics = metrics if metrics is not None else NullMetrics()
        self.pod_max_in_unschedulable = pod_max_in_unschedulable
        less = next(iter(self._profiles.values())).queue_sort_less()
        self._active = ActiveQueue(less)
        self._backoff = BackoffQueue(now, self._active.less, pod_initial_backoff, pod_max_backoff)
        self._unschedulable = UnschedulablePods()
        self._in_flight = InFlight()
        self._hints = HintRegistry(
            {name: profile.events_to_register() for name, profile in self._profiles.items()}
        )
        if nominator is None:
            nominator = Nominator(get_pod=get_pod, lookup=self.queued_pod)
        self.nominator = nominator
        self._scheduling_cycle = 0
        self._move_request_cycle = -1
        self._sequence = itertools.count(1)
        self._unschedulable_reasons: dict[tuple[str, str], int] = {}

    # Queued pod records -------------------------------------------------------------------------

    def new_queued_pod_info(self, pod: Pod) -> QueuedPodInfo:
        """A fresh record for ``pod``: inserted now, never attempted."""
        return QueuedPodInfo(pod=pod, timestamp=self._now(), sequence=next(self._sequence))

    @property
    def scheduling_cycle(self) -> int:
        """How many pods have been popped; read it when an attempt fails."""
        return self._scheduling_cycle

    @property
    def move_request_cycle(self) -> int:
        """The scheduling cycle at the last move request (−1 before any)."""
        return self._move_request_cycle

    @property
    def hints(self) -> HintRegistry:
        return self._hints

    # Pending pods from the watch ----------------------------------------------------------------

    def add(self, pod: Pod) -> None:
        """A new pending pod: to activeQ, or parked as gated if a PreEnqueue plugin refuses it."""
        info = self.new_queued_pod_info(pod)
        if self._move_to_active(info, UNSCHEDULED_POD_ADD.name, admitted=False):
            self._wake()

    def update(self, old: Pod | None, new: Pod) -> None:
        """A pending pod changed."""
        events = pod_update_events(old, new) if old is not None else [UNSCHEDULED_POD_UPDATE]
        if self._in_flight.add_events_if_pod_in_flight(old, new, events):
            return
        if old is not None:
            info = self._active.update_pod(new)
            if info is None:
                info = self._backoff.update_pod(new)
            if info is not None:
                self.nominator.update_nominated_pod(old, info.pod)
                return
        info = self._unschedulable.get(new.key)
        if info is not None:
            info.pod = new
            self.nominator.update_nominated_pod(old if old is not None else new, new)
            for event in events:
                strategy = self._hints.worth_requeuing(info, event, old, new)
                where = self._requeue(info, strategy, event.name)
                if where in (ACTIVE, BACKOFF):
                    self._wake()
                    break
            return
        info = self.new_queued_pod_info(new)
        if self._move_to_active(info, UNSCHEDULED_POD_UPDATE.name, admitted=False):
            self._wake()

    def delete(self, pod: Pod) -> None:
        """A pending pod is gone: forget its nomination and drop it from whichever queue has it."""
        self.nominator.delete_nominated_pod_if_exists(pod)
        key = pod.key
        if self._active.delete(key) is not None:
            return
        if self._backoff.delete(key) is not None:
            return
        self._unschedulable.delete(key)

    def activate(self, pods: Iterable[Pod]) -> None:
        """Move pods waiting in unschedulablePods or backoffQ straight to activeQ (ForceActivate).

        For a pod being scheduled right now, a ForceActivate event is recorded instead, so the
        pod is retried if this attempt fails.
        """
        activated = False
        for pod in pods:
            if self._activate_one(pod):
                activated = True
                continue
            self._in_flight.add_events_if_pod_in_flight(None, pod, [FORCE_ACTIVATE])
            self._move_request_cycle = self._scheduling_cycle
        if activated:
            self._wake()

    def _activate_one(self, pod: Pod) -> bool:
        key = pod.key
        info = self._unschedulable.get(key)
        from_backoff = False
        if info is None:
            info = self._backoff.delete(key)
            if info is None:
                return False
            from_backoff = True
        return self._move_to_active(info, FORCE_ACTIVATE.name, admitted=from_backoff)

    # The scheduling loop ------------------------------------------------------------------------

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to try, now in flight; ``None`` when there is none (never blocks).

        A pod's first pop reports how long it waited in activeQ for it. The pod's rejecting
        plugins are cleared, as upstream clears them, for the attempt to fill in.
        """
        while True:
            info = self._active.pop()
            if info is None:
                info = self._backoff.pop_rejected()
                if info is None:
                    return None
                self._incoming(ACTIVE, POP_FROM_BACKOFF.name)
            info.attempts += 1
            if not self._in_flight.add_pod(info.pod):
                # Already being scheduled: the duplicate record is discarded.
                continue
            self._scheduling_cycle += 1
            if info.attempts == 1 and info.initial_attempt_timestamp is not None:
                self._metrics.observe(
                    m.QUEUE_WAIT_BEFORE_FIRST_ATTEMPT, self._now() - info.initial_attempt_timestamp
                )
            profile = info.pod.scheduler_name
            for plugin in info.unschedulable_plugins | info.pending_plugins:
                self._count_reason(plugin, profile, -1)
            # The plugins that rejected the last attempt are forgotten: an attempt that ends in
            # an error names none, and the pod then goes to backoff, not to wait for events.
            info.unschedulable_plugins = set()
            info.pending_plugins = set()
            return info

    def done(self, uid: str) -> None:
        """The attempt on this pod is over (bound, or given up); stop tracking it as in flight."""
        self._in_flight.done(uid)

    def is_in_flight(self, uid: str) -> bool:
        return uid in self._in_flight

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, scheduling_cycle: int) -> bool:
        """Put back a pod whose attempt failed, where its rejectors' hints send it.

        ``info.unschedulable_plugins`` / ``pending_plugins`` must hold the last attempt's
        rejectors (empty for an error). The pod stops being in flight in any case. Returns
        ``False``, changing nothing else, if the pod is already in one of the sub-queues.
        ``scheduling_cycle`` is :attr:`scheduling_cycle` read at failure time; with queueing
        hints it only documents the call.
        """
        try:
            key = info.pod.key
            if key in self._unschedulable or key in self._active or key in self._backoff:
                return False
            if not info.unschedulable_plugins and not info.pending_plugins:
                info.consecutive_errors_count += 1
            else:
                info.unschedulable_count += 1
                info.consecutive_errors_count = 0
            info.timestamp = self._now()
            info.sequence = next(self._sequence)
            info.backoff_expiration = None
            profile = info.pod.scheduler_name
            for plugin in info.unschedulable_plugins | info.pending_plugins:
                self._count_reason(plugin, profile, +1)
            strategy = self._strategy_for_in_flight_pod(info)
            where = self._requeue(info, strategy, SCHEDULE_ATTEMPT_FAILURE)
            if where in (ACTIVE, BACKOFF):
                self._wake()
            return True
        finally:
            self._in_flight.done(info.pod.uid)

    def _strategy_for_in_flight_pod(self, info: QueuedPodInfo) -> QueueingStrategy:
        if not info.unschedulable_plugins and not info.pending_plugins:
            return QueueingStrategy.AFTER_BACKOFF
        events = self._in_flight.events_for(info.pod.uid)
        if events is None:
            return QueueingStrategy.AFTER_BACKOFF
        strategy = QueueingStrategy.SKIP
        for recorded in events:
            result = self._hints.worth_requeuing(info, recorded.event, recorded.old, recorded.new)
            if result is QueueingStrategy.SKIP:
                continue
            if result is QueueingStrategy.IMMEDIATELY:
                return result
            strategy = QueueingStrategy.AFTER_BACKOFF
            if not info.pending_plugins:
                return strategy
        return strategy

    def flush_backoff_completed(self) -> None:
        """Move every pod whose backoff has ended to activeQ (run every second, on the second)."""
        activated = False
        for info in self._backoff.pop_all_completed():
            if self._move_to_active(info, BACKOFF_COMPLETE.name, admitted=True):
                activated = True
        if activated:
            self._wake()

    def flush_unschedulable_leftover(self) -> None:
        """Retry pods that have waited in unschedulablePods longer than the limit (every 30 s)."""
        now = self._now()
        limit = self.pod_max_in_unschedulable
        stale = [info for info in self._unschedulable.values() if now - info.timestamp > limit]
        if stale:
            self._move_pods(stale, UNSCHEDULABLE_TIMEOUT, None, None)

    # Cluster events -----------------------------------------------------------------------------

    def move_all_to_active_or_backoff_queue(
        self,
        event: ClusterEvent,
        old_obj: Any = None,
        new_obj: Any = None,
        pre_check: PreEnqueueCheck | None = None,
    ) -> None:
        """Offer ``event`` to every unschedulable pod (passing ``pre_check``, if given)."""
        if not self._hints.is_event_of_interest(event):
            return
        hints = self._hints
        offered = self._unschedulable.offered(
            lambda plugin: hints.gating_plugin_interested(plugin, event),
            lambda group: hints.may_requeue(group, event),
        )
        if pre_check is not None:
            offered = [info for info in offered if pre_check(info.pod)]
        self._move_pods(offered, event, old_obj, new_obj)

    def assigned_pod_added(self, pod: Pod) -> None:
        self.move_all_to_active_or_backoff_queue(ASSIGNED_POD_ADD, None, pod)

    def assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        for event in pod_update_events(old, new):
            self.move_all_to_active_or_backoff_queue(event, old, new)

    def assigned_pod_deleted(self, pod: Pod) -> None:
        self.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, pod, None)

    def _move_pods(
        self, infos: list[QueuedPodInfo], event: ClusterEvent, old_obj: Any, new_obj: Any
    ) -> None:
        hints = self._hints
        if not hints.is_event_of_interest(event):
            return
        activated = False
        for info in infos:
            if info.gated and not hints.gating_plugin_interested(info.gating_plugin, event):
                continue
            strategy = hints.worth_requeuing(info, event, old_obj, new_obj)
            if strategy is QueueingStrategy.SKIP:
                continue
            self._unschedulable.delete(info.pod.key)
            admitted = False
            if info.gated:
                # Whichever sub-queue the strategy names, a gated pod must pass PreEnqueue to get
                # there, and one still gated goes back to unschedulablePods either way. Asking
                # first spares the backoff arithmetic for the common case: every pod waiting on
                # its own preemption is offered every victim's deletion.
                admitted = self._run_pre_enqueue(info)
                if not admitted:
                    self._add_unschedulable(info, event.name)
                    continue
            if self._requeue(info, strategy, event.name, admitted=admitted) in (ACTIVE, BACKOFF):
                activated = True
        self._move_request_cycle = self._scheduling_cycle
        self._in_flight.add_event(event, old_obj, new_obj)
        if activated:
            self._wake()

    # Moves between sub-queues -------------------------------------------------------------------

    def _requeue(
        self,
        info: QueuedPodInfo,
        strategy: QueueingStrategy,
        event: str,
        *,
        admitted: bool = False,
    ) -> str:
        """Send the pod where ``strategy`` says; returns the sub-queue it ended up in.

        ``admitted``: PreEnqueue has just let the pod through, so it is not asked again.
        """
        if strategy is QueueingStrategy.SKIP:
            self._add_unschedulable(info, event)
            return UNSCHEDULABLE
        if strategy is QueueingStrategy.AFTER_BACKOFF and self._backoff.is_backing_off(info):
            moved = self._move_to_backoff(info, event, admitted=admitted)
            return BACKOFF if moved else UNSCHEDULABLE
        moved = self._move_to_active(info, event, admitted=admitted)
        return ACTIVE if moved else UNSCHEDULABLE

    def _move_to_active(self, info: QueuedPodInfo, event: str, *, admitted: bool) -> bool:
        # ``admitted``: the pod passed PreEnqueue already (a pod coming straight from backoffQ
        # passed it when it went in; a gated one just released by its plugin's event, a moment
        # ago), so it is not asked again.
        if not admitted:
            self._run_pre_enqueue(info)
        key = info.pod.key
        if info.gated:
            if key in self._active or key in self._backoff or key in self._unschedulable:
                return False
            self._add_unschedulable(info, event)
            return False
        if info.initial_attempt_timestamp is None:
            info.initial_attempt_timestamp = self._now()
        self._unschedulable.delete(key)
        self._backoff.delete(key)
        self._active.add_or_update(info)
        self._incoming(ACTIVE, event)
        if event in (UNSCHEDULED_POD_ADD.name, UNSCHEDULED_POD_UPDATE.name):
            self.nominator.add_nominated_pod(info.pod, None)
        return True

    def _move_to_backoff(self, info: QueuedPodInfo, event: str, *, admitted: bool = False) -> bool:
        if not admitted:
            self._run_pre_enqueue(info)
        key = info.pod.key
        if info.gated:
            if key not in self._unschedulable:
                self._add_unschedulable(info, event)
            return False
        self._unschedulable.delete(key)
        self._backoff.add(info)
        self._incoming(BACKOFF, event)
        return True

    def _add_unschedulable(self, info: QueuedPodInfo, event: str) -> None:
        if self._unschedulable.add_or_update(info):
            self._incoming(UNSCHEDULABLE, event)

    def _run_pre_enqueue(self, info: QueuedPodInfo) -> bool:
        """Run the PreEnqueue plugins and record the gate; returns whether the pod passed."""
        pod = info.pod
        profile = self._profiles.get(pod.scheduler_name)
        status = profile.run_pre_enqueue(pod) if profile is not None else None
        if status is None or status.is_success():
            info.gating_plugin = ""
            info.gated = False
        else:
            plugin = status.plugin or "PreEnqueue"
            info.unschedulable_plugins.add(plugin)
            self._count_reason(plugin, pod.scheduler_name, +1)
            info.gating_plugin = plugin
            info.gated = True
        if self._unschedulable.get(pod.key) is info:
            self._unschedulable.add_or_update(info)
        return not info.gated

    # Nominations (the PodNominator the plugins see) -----------------------------------------

    def add_nominated_pod(self, pod: Pod, info: NominatingInfo | None) -> None:
        self.nominator.add_nominated_pod(pod, info)

    def delete_nominated_pod_if_exists(self, pod: Pod) -> None:
        self.nominator.delete_nominated_pod_if_exists(pod)

    def update_nominated_pod(self, old: Pod, new: Pod) -> None:
        self.nominator.update_nominated_pod(old, new)

    def nominated_pods_for_node(self, node_name: str) -> list[Pod]:
        return self.nominator.nominated_pods_for_node(node_name)

    def queued_pod(self, key: str) -> Pod | None:
        """The queued object of a pending pod by ``namespace/name``, wherever it waits."""
        info = self._active.get(key) or self._unschedulable.get(key) or self._backoff.get(key)
        return info.pod if info is not None else None

    # Introspection ------------------------------------------------------------------------------

    def get(self, key: str) -> QueuedPodInfo | None:
        """The queued record of the pod ``namespace/name`` in any sub-queue (not in flight)."""
        return self._backoff.get(key) or self._unschedulable.get(key) or self._active.get(key)

    def location(self, pod: Pod) -> str | None:
        """``active``, ``backoff``, ``unschedulable``, ``gated``, ``in-flight`` or ``None``."""
        key = pod.key
        if key in self._active:
            return ACTIVE
        if key in self._backoff:
            return BACKOFF
        info = self._unschedulable.get(key)
        if info is not None:
            return GATED if info.gated else UNSCHEDULABLE
        if pod.uid in self._in_flight:
            return IN_FLIGHT
        return None

    def pending_pods(self) -> list[Pod]:
        """Every pod waiting in a sub-queue (activeQ, backoffQ, then unschedulablePods)."""
        infos = self._active.items() + self._backoff.items() + self._unschedulable.values()
        return [info.pod for info in infos]

    def active_pods(self) -> list[Pod]:
        return [info.pod for info in self._active.items()]

    def backoff_pods(self) -> list[Pod]:
        return [info.pod for info in self._backoff.items()]

    def unschedulable_pods(self) -> list[Pod]:
        return [info.pod for info in self._unschedulable.values()]

    def in_flight_pods(self) -> list[Pod]:
        return self._in_flight.pods()

    def in_flight_events(self) -> list[RecordedEvent]:
        return self._in_flight.events()

    def pending_counts(self) -> dict[str, int]:
        """Sizes for the ``scheduler_pending_pods{queue}`` gauge."""
        return {
            ACTIVE: len(self._active),
            BACKOFF: len(self._backoff),
            UNSCHEDULABLE: self._unschedulable.unschedulable_count,
            GATED: self._unschedulable.gated_count,
        }

    def record_pending_pods(self) -> None:
        """Set ``scheduler_pending_pods{queue}`` from :meth:`pending_counts`."""
        for queue, count in self.pending_counts().items():
            self._metrics.set(m.PENDING_PODS, count, {"queue": queue})

    def backoff_duration(self, info: QueuedPodInfo) -> float:
        return self._backoff.duration(info)

    def backoff_time(self, info: QueuedPodInfo) -> float:
        return self._backoff.backoff_time(info)

    # Plumbing -----------------------------------------------------------------------------------

    def _wake(self) -> None:
        if self._on_activity is not None:
            self._on_activity()

    def _incoming(self, queue: str, event: str) -> None:
        self._metrics.inc(m.QUEUE_INCOMING_PODS, {"queue": queue, "event": event})

    def _count_reason(self, plugin: str, profile: str, delta: int) -> None:
        key = (plugin, profile)
        value = self._unschedulable_reasons.get(key, 0) + delta
        self._unschedulable_reasons[key] = value
        self._metrics.set(m.UNSCHEDULABLE_PODS, value, {"plugin": plugin, "profile": profile})
