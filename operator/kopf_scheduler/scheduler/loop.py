"""The scheduler: one loop that pops a pod, runs its scheduling cycle, and lets it bind meanwhile.

One asyncio task owns the queue and the cache, so nothing here takes a lock. The loop runs the
scheduling cycle (:mod:`~kopf_scheduler.scheduler.scheduling_cycle`) synchronously; only API calls
(binding, status patches, victim deletion) run as background tasks, and the next pod is scheduled
while the previous one binds (:mod:`~kopf_scheduler.scheduler.binding_cycle`), as upstream does
with goroutines. Failures from either cycle go to one handler
(:mod:`~kopf_scheduler.scheduler.failure_handler`). Before each pod the loop waits for the status
patch of the previous cycle's failure, and, when the binding cycles unfinished reach their bound,
for one of them to end. :class:`Scheduler` wires these together and drives them until stopped.
The watches report to it through its ``on_...`` methods, each what upstream's event handlers do
to the cache and the queue for one change.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Iterable, Mapping
from typing import Any

from kopf_scheduler.cache.cache import Cache
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    ClusterEvent,
)
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import Clock, EventRecorder, Metrics, NullMetrics, PodStatusWriter
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue, priority_at_most
from kopf_scheduler.scheduler.algorithm import Algorithm
from kopf_scheduler.scheduler.binding_cycle import DEFAULT_MAX_BINDING_CYCLES, BindingCycles
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.scheduler.failure_handler import FailureHandler
from kopf_scheduler.scheduler.nominations import NominationHygiene
from kopf_scheduler.scheduler.periodic import start_periodic_tasks
from kopf_scheduler.scheduler.reporting import Reporter
from kopf_scheduler.scheduler.scheduling_cycle import SchedulingCycle
from kopf_scheduler.scheduler.tasks import BackgroundTasks

WAITING_POD_REMOVED = "removed"
"""The rejection a pod waiting at Permit gets when it is deleted (or bound elsewhere)."""


class Scheduler:
    def __init__(
        self,
        *,
        profiles: Mapping[str, Framework],
        cache: Cache,
        queue: SchedulingQueue,
        snapshot: Snapshot,
        algorithm: Algorithm,
        clock: Clock,
        status_writer: PodStatusWriter,
        event_recorder: EventRecorder,
        get_pod: Callable[[str], Pod | None],
        metrics: Metrics | None = None,
        on_attempt: Callable[[AttemptRecord], None] | None = None,
        max_binding_cycles: int = DEFAULT_MAX_BINDING_CYCLES,
        tasks: BackgroundTasks | None = None,
        wakeup: asyncio.Event | None = None,
        nomination_hygiene: bool = True,
        active: bool = True,
    ) -> None:
        """``tasks`` runs the background work (the handles' ``spawn`` must use the same) and
        ``wakeup`` is what the queue sets when a pod may have become poppable; both are made
        here when not given. ``active`` False starts a follower, which pops nothing."""
        self.profiles = profiles
        self.cache = cache
        self.queue = queue
        self.snapshot = snapshot
        self.algorithm = algorithm
        self.clock = clock
        self.metrics: Metrics = metrics if metrics is not None else NullMetrics()
        self.active = active
        """Only an active scheduler (the leader) pops pods; followers keep their caches warm."""
        self.last_advanced: float | None = None
        """When :meth:`run` last took a step (a cycle, and the wait for its status patch);
        ``None`` while it waits for work. A value that grows old means the loop is stuck."""
        self._wakeup = wakeup if wakeup is not None else asyncio.Event()
        self._tasks = tasks if tasks is not None else BackgroundTasks()
        self._reporter = Reporter(
            clock=clock,
            snapshot=snapshot,
            status_writer=status_writer,
            event_recorder=event_recorder,
            on_attempt=on_attempt,
        )
        self.nominations = NominationHygiene(
            enabled=nomination_hygiene,
            status_writer=status_writer,
            nominated_pods_for_node=queue.nominator.nominated_pods_for_node,
            forget=queue.nominator.delete_nominated_pod_if_exists,
            spawn=self.spawn,
        )
        self._failures = FailureHandler(
            queue=queue,
            clock=clock,
            metrics=self.metrics,
            get_pod=get_pod,
            nominations=self.nominations,
            reporter=self._reporter,
            tasks=self._tasks,
        )
        self._bindings = BindingCycles(
            queue=queue,
            cache=cache,
            clock=clock,
            metrics=self.metrics,
            reporter=self._reporter,
            failures=self._failures,
            tasks=self._tasks,
            on_room=self.notify,
            limit=max_binding_cycles,
        )
        self._scheduling = SchedulingCycle(
            profiles=profiles,
            cache=cache,
            queue=queue,
            snapshot=snapshot,
            algorithm=algorithm,
            clock=clock,
            metrics=self.metrics,
            reporter=self._reporter,
            failures=self._failures,
            bindings=self._bindings,
        )

    @property
    def cycle(self) -> int:
        """The number of the last scheduling cycle that ran the algorithm."""
        return self._scheduling.cycle

    @property
    def warnings(self) -> list[str]:
        """What the scheduler warned about its configuration as it met pods (a profile that
        schedules members of a PodGroup one by one), once each."""
        return list(self._scheduling.gang_notice.warnings)

    @property
    def binding_cycles(self) -> int:
        """Binding cycles started and not yet finished (the goroutines gauge of ``binding``)."""
        return self._bindings.unfinished

    @property
    def pending_tasks(self) -> int:
        return len(self._tasks)

    def spawn(self, coroutine: Coroutine[Any, Any, None]) -> None:
        """Run ``coroutine`` in the background; failures are logged, never lost silently."""
        self._tasks.spawn(coroutine)

    async def drain(self) -> None:
        """Wait until every background task (bindings, patches, preemptions) has finished."""
        await self._tasks.drain()

    def cancel_pending(self) -> None:
        """Cancel the background tasks: what waits at Permit is forgotten, API calls under way
        stop (the simulator's time limit)."""
        self._tasks.cancel()

    def notify(self) -> None:
        """Wake the loop: a pod became poppable (the queue's activity callback)."""
        self._wakeup.set()

    def schedule_one(self) -> bool:
        """Schedule the next pod if there is one; ``False`` when the queue had nothing to pop.

        A failed cycle leaves its status patch for :meth:`run` to wait for before the next pod.
        """
        return self._scheduling.schedule_one()

    def report_invalid_pod(
        self, raw: Mapping[str, Any], scheduler_name: str, error: InvalidObjectError
    ) -> None:
        """A pending pod too malformed to parse: say why on the pod (event and condition)."""
        self._failures.report_invalid_pod(raw, scheduler_name, error)

    # What the watches report (upstream's event handlers' calls into the cache and the queue) --

    def node(self, name: str) -> Node | None:
        """The node as the cache last saw it (``None`` once deleted)."""
        info = self.cache.get_node_info(name)
        return info.node if info is not None else None

    def on_node_added(self, node: Node) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)

    def on_node_updated(self, old: Node, new: Node, events: Iterable[ClusterEvent]) -> None:
        """``events`` are what the update amounts to, offered to the rejected pods in order; a
        node that became unschedulable voids the nominations to it."""
        self.cache.add_node(new)
        if new.unschedulable and not old.unschedulable:
            self.nominations.node_gone(new.name, "node marked unschedulable")
        for event in events:
            self.queue.move_all_to_active_or_backoff_queue(event, old, new)

    def on_node_deleted(self, name: str) -> None:
        self.cache.remove_node(name)
        self.nominations.node_gone(name, "node deleted")
        self.queue.move_all_to_active_or_backoff_queue(NODE_DELETE, None, None)

    def on_node_unreadable(self, name: str) -> None:
        """A node too malformed to parse: out of the cache, as if it did not exist, with no
        cluster event."""
        self.cache.remove_node(name)

    def on_namespace_updated(self, name: str, labels: Mapping[str, str]) -> None:
        """Added or changed: the labels namespace selectors of affinity terms match."""
        self.cache.set_namespace(name, labels)

    def on_namespace_deleted(self, name: str) -> None:
        self.cache.remove_namespace(name)

    def on_cluster_event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        """Any other object's change (storage, devices, PodGroups): offered to the rejected
        pods, whose plugins' queueing hints decide which may retry."""
        self.queue.move_all_to_active_or_backoff_queue(event, old, new)

    def on_assigned_pod_added(self, pod: Pod) -> None:
        """A pod bound to a node (by us or by another): it takes room in the cache."""
        self.nominations.bound(pod)
        self.cache.add_pod(pod)
        self.queue.assigned_pod_added(pod)

    def on_assigned_pod_updated(self, old: Pod, new: Pod) -> None:
        self.nominations.bound(new)
        self.cache.update_pod(old, new)
        self.queue.assigned_pod_updated(old, new)

    def on_assigned_pod_deleted(self, pod: Pod) -> None:
        self.cache.remove_pod(pod)
        self.queue.assigned_pod_deleted(pod)

    def on_pending_pod_added(self, pod: Pod) -> None:
        """A pod of one of our profiles waiting for a node."""
        self.queue.add(pod)

    def on_pending_pod_updated(self, old: Pod, new: Pod) -> None:
        """A pending pod changed; one assumed is being bound, and stays as the cache has it. A
        nomination it dropped held room for the pods of equal or lower priority: those may
        retry."""
        if self.cache.is_assumed(new):
            return
        self.queue.update(old, new)
        if old.nominated_node_name and old.nominated_node_name != new.nominated_node_name:
            self.queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, old, None, priority_at_most(old.priority)
            )

    def on_pending_pod_deleted(self, pod: Pod) -> None:
        """A pending pod of ours left the queue: deleted, or bound (upstream's
        ``deletePodFromSchedulingQueue``).

        A pod rejected while waiting at Permit held room in the cache: every unschedulable pod
        may retry. A pod that carried a nomination held room for the pods of equal or lower
        priority: those may retry. An assumed pod stays in the cache until its binding fails.
        """
        framework = self.profiles.get(pod.scheduler_name)
        if framework is None:
            return
        self.queue.delete(pod)
        if framework.reject_waiting_pod(pod.uid, WAITING_POD_REMOVED):
            self.queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, pod, None)
        elif pod.nominated_node_name:
            self.queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, pod, None, priority_at_most(pod.priority)
            )

    async def run(self, stop: asyncio.Event) -> None:
        """Schedule until ``stop`` is set; yields to the event loop between pods."""
        periodic = start_periodic_tasks(
            queue=self.queue, cache=self.cache, clock=self.clock, metrics=self.metrics
        )
        stop_waiter = asyncio.ensure_future(stop.wait())
        stop_waiter.add_done_callback(lambda _: self._wakeup.set())
        try:
            while not stop.is_set():
                self.last_advanced = self.clock.now()
                self._wakeup.clear()
                # Back-pressure: with every binding place taken, wait (as for work) until a
                # binding cycle ends; each is bounded by its requests' timeouts and retries.
                if self.active and self._bindings.has_room() and self.schedule_one():
                    patch = self._scheduling.status_patch
                    if patch is not None:
                        await asyncio.wait([patch])
                    else:
                        await asyncio.sleep(0)
                    continue
                self.last_advanced = None
                # On the event itself, not on a task around it: the loop then runs at the event
                # loop's next turn after the queue woke it, before a watch reader that yields
                # after each event applies the next one (k8s/reflector.py), as kube-scheduler's
                # scheduling goroutine takes its snapshot while its informers go on.
                await self._wakeup.wait()
        finally:
            stop_waiter.cancel()
            for task in periodic:
                task.cancel()
            await asyncio.gather(*periodic, return_exceptions=True)
