"""Run a scenario through the real scheduler on the in-memory cluster until nothing changes.

The driver calls the scheduler's own cycle, lets background tasks (bindings, patches, victim
deletions, volume binding waiting for the PV controller) finish while the cluster's controllers
act on what those tasks write, and then jumps virtual time to the next thing that can happen: a
backoff expiring, a terminating pod disappearing, a timer. When only unschedulable pods remain
it gives them one retry after the periodic flush; if that changes nothing, the run is over.
The run also ends, wherever it stands, once ``max_virtual_seconds`` have passed: every loop of
the driver checks it, so a run always returns.

While tasks are pending, time moves only once the event loop has nothing left to run
(``SimulationLoop.idle``, sim/loop.py), so a simulation runs on that loop:
``kopf_scheduler.sim.loop.run(simulation.run(scenario))``.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.assembly import ClusterView, Ports, build_scheduler
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.informer.handlers import EventHandlers
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.watched_kinds import WATCHED_KINDS
from kopf_scheduler.informer.workloads import WorkloadIndex
from kopf_scheduler.queue.scheduling_queue import ACTIVE, BACKOFF, SchedulingQueue
from kopf_scheduler.scheduler.binding_cycle import DEFAULT_MAX_BINDING_CYCLES
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.sim.cluster import InMemoryCluster
from kopf_scheduler.sim.loop import running_simulation_loop
from kopf_scheduler.sim.scenario import DRA_KINDS, STORAGE_KINDS, Scenario
from kopf_scheduler.sim.utilisation import Utilisation, node_utilisation
from kopf_scheduler.sim.virtual_clock import VirtualClock

UNSCHEDULABLE_FLUSH_PERIOD = 30.0
STORAGE_CREATION_ORDER = {kind: rank for rank, kind in enumerate(STORAGE_KINDS)}
DRA_CREATION_ORDER = {kind: rank for rank, kind in enumerate(DRA_KINDS)}
SYSTEM_PRIORITY_CLASSES: tuple[dict[str, Any], ...] = (
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-cluster-critical"},
        "value": 2000000000,
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "system-node-critical"},
        "value": 2000001000,
    },
)


@dataclass
class SimulationResult:
    cluster: InMemoryCluster
    scheduler: Scheduler
    attempts: list[AttemptRecord] = field(default_factory=list)
    pending_order: list[str] = field(default_factory=list)
    virtual_seconds: float = 0.0
    utilisation_before: dict[str, Utilisation] = field(default_factory=dict)
    """Each node's utilisation when time first moved (the scenario's bound pods only)."""
    utilisation_after: dict[str, Utilisation] = field(default_factory=dict)
    """Each node's utilisation when the run ended."""


@dataclass(eq=False, repr=False)
class Simulation:
    config: SchedulerConfig
    _: dataclasses.KW_ONLY
    seed: int = 0
    max_virtual_seconds: float = 24 * 3600.0
    max_binding_cycles: int = DEFAULT_MAX_BINDING_CYCLES
    explain: bool = False
    """Take each attempt record's plugin states as the attempt ends (what a gang member's group
    looked like then), for a report that shows them; they cost a walk of the snapshot per gang
    attempt, so only a report that shows them asks."""
    utilisation: bool = True
    """Measure every node's utilisation before and after the run for the result (two walks of
    every pod); the capacity count measures its own and switches this off."""
    clock: VirtualClock = field(default_factory=VirtualClock, init=False)
    cluster: InMemoryCluster = field(init=False)
    store: Store = field(default_factory=Store, init=False)
    attempts: list[AttemptRecord] = field(default_factory=list, init=False)
    scheduler: Scheduler | None = field(default=None, init=False)
    handlers: EventHandlers | None = field(default=None, init=False)
    pending_order: list[str] = field(default_factory=list, init=False)
    started: float = field(init=False)
    utilisation_before: dict[str, Utilisation] | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.cluster = InMemoryCluster(self.clock)
        self.started = self.clock.now()

    def _setup(self) -> tuple[Scheduler, EventHandlers]:
        cluster = self.cluster
        ports = Ports(
            self.clock,
            cluster,
            cluster,
            cluster,
            cluster,
            storage_writer=cluster,
            claim_writer=cluster,
        )
        view = ClusterView(
            self.store.get_pod,
            self.store.list_pdbs,
            self.store.storage,
            self.store.pod_groups,
            self.store.dra,
        )
        # The ReplicaSets and StatefulSets of a scenario's workloads give their pods the default
        # topology spreading kube-scheduler applies.
        workloads = WorkloadIndex()
        scheduler = build_scheduler(
            self.config,
            ports,
            view,
            seed=self.seed,
            on_attempt=self._keep_attempt,
            max_binding_cycles=self.max_binding_cycles,
            workload_selectors=workloads,
        )
        handlers = EventHandlers(scheduler, self.store, workloads)
        enabled = {
            plugin.name
            for framework in scheduler.profiles.values()
            for plugin in framework.plugins.all
        }
        # As a scheduler on a cluster watches (WATCHED_KINDS), the simulated one sees a kind
        # that only one plugin reads (PodGroups) only when a profile enables that plugin.
        routes = {
            watched.kind: handlers.route(watched.kind)
            for watched in WATCHED_KINDS
            if not watched.plugin or watched.plugin in enabled
        }

        def deliver(kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
            route = routes.get(kind)
            if route is not None:
                route(event_type, raw)

        cluster.subscribe(deliver)
        self.scheduler = scheduler
        self.handlers = handlers
        return scheduler, handlers

    def _keep_attempt(self, record: AttemptRecord) -> None:
        if self.explain:
            _ = record.plugin_states  # the plugins answer now, not when the report is built
        self.attempts.append(record)

    def _out_of_time(self) -> bool:
        return self.clock.now() - self.started >= self.max_virtual_seconds

    def _beyond_limit(self, moment: float) -> bool:
        return moment - self.started > self.max_virtual_seconds

    def _next_due(self) -> float | None:
        """The next moment something happens by itself: a timer, or a deletion whose grace
        period ends."""
        due = [
            moment
            for moment in (self.clock.next_deadline(), self.cluster.next_deletion())
            if moment is not None
        ]
        return min(due, default=None)

    async def _settle(self, scheduler: Scheduler) -> None:
        loop = running_simulation_loop()
        for _ in range(100_000):
            # The controllers catch up with what the scheduler's tasks wrote (a PV's claimRef,
            # a claim's selected node) before time moves on.
            self.cluster.run_controllers()
            if not scheduler.pending_tasks:
                return
            # Every task runs until it waits; what still waits then waits for time to pass.
            await loop.idle()
            if any(framework.waiting_pods() for framework in scheduler.profiles.values()) and (
                _has_pods_to_pop(scheduler.queue)
            ):
                # Pods held at Permit wait for pods the scheduler pops at once or once their
                # back-off ends (a gang's other members), long before their timeout could pass.
                return
            due = self._next_due()
            if not scheduler.pending_tasks or due is None:
                continue
            if self._beyond_limit(due):
                return
            # Time moves to the next timer or deletion: a victim's grace period may end while
            # members wait at Permit, and its deletion requeues them.
            self.clock.advance_to(due)
            self.cluster.finish_due_deletions()

    def start(self) -> Scheduler:
        """Wire the scheduler to the in-memory cluster (call inside the event loop)."""
        if self.scheduler is not None:
            return self.scheduler
        scheduler, _ = self._setup()
        for raw in SYSTEM_PRIORITY_CLASSES:
            self.cluster.create(raw)
        return scheduler

    def apply(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Create an object in the cluster (the scheduler sees it at once)."""
        return self.cluster.create(raw)

    async def run_until_quiet(self) -> None:
        """Schedule, let time pass, and stop when nothing more can happen."""
        scheduler = self.start()
        await self._drive(scheduler, self.clock.now())

    def _utilisation(self) -> dict[str, Utilisation]:
        if not self.utilisation:
            return {}
        cluster = self.cluster
        return node_utilisation(
            cluster.nodes,
            cluster.pods.values(),
            cluster.objects("ResourceSlice").values(),
            cluster.objects("ResourceClaim").values(),
        )

    def result(self) -> SimulationResult:
        assert self.scheduler is not None
        after = self._utilisation()
        return SimulationResult(
            self.cluster,
            self.scheduler,
            self.attempts,
            self.pending_order,
            self.clock.now() - self.started,
            # Nothing has run yet when time never moved: the start is the end.
            after if self.utilisation_before is None else self.utilisation_before,
            after,
        )

    async def run(self, scenario: Scenario) -> SimulationResult:
        scheduler = self._setup()[0]
        cluster = self.cluster
        defined = {c["metadata"]["name"] for c in scenario.priority_classes}
        for raw in SYSTEM_PRIORITY_CLASSES:
            if raw["metadata"]["name"] not in defined:
                cluster.create(raw)
        cluster.load(
            itertools.chain(
                scenario.namespaces,
                scenario.priority_classes,
                scenario.nodes,
                sorted(scenario.storage, key=lambda raw: STORAGE_CREATION_ORDER[raw["kind"]]),
                sorted(scenario.dra, key=lambda raw: DRA_CREATION_ORDER[raw["kind"]]),
                scenario.pod_groups,
                scenario.controllers,
                scenario.running_pods,
                scenario.pdbs,
            )
        )
        for pending in scenario.pending_pods:
            self._arrived(cluster.create(self._for_us(pending)))
        for waiting in scenario.waiting_pods:
            cluster.ordered_pods.add(
                dataclasses.replace(waiting, pod=self._for_us(waiting.pod)), self._arrived
            )
        cluster.run_controllers()
        await self._drive(scheduler, self.clock.now())
        return self.result()

    def _for_us(self, pending: dict[str, Any]) -> dict[str, Any]:
        """In a scenario, a pod that names no scheduler is meant for the one simulated."""
        spec = pending.get("spec") or {}
        if spec.get("schedulerName"):
            return pending
        default_profile = self.config.profiles[0].scheduler_name
        return {**pending, "spec": {**spec, "schedulerName": default_profile}}

    def _arrived(self, created: Mapping[str, Any]) -> None:
        metadata = created["metadata"]
        self.pending_order.append(f"{metadata['namespace']}/{metadata['name']}")

    def _next_leftover_flush(self, queue: SchedulingQueue, start: float) -> float:
        """The first 30 s flush tick (counted from the start) that releases an unschedulable pod."""
        stamps = [
            info.timestamp
            for info in (queue.get(pod.key) for pod in queue.unschedulable_pods())
            if info is not None
        ]
        due = min(stamps, default=self.clock.now()) + queue.pod_max_in_unschedulable
        ticks = math.floor((due - start) / UNSCHEDULABLE_FLUSH_PERIOD) + 1
        return max(self.clock.now(), start + ticks * UNSCHEDULABLE_FLUSH_PERIOD)

    async def _drive(self, scheduler: Scheduler, start: float) -> None:
        running_simulation_loop()  # fail at once, not at the first pending task
        if self.utilisation_before is None:
            self.utilisation_before = self._utilisation()
        queue = scheduler.queue
        cluster = self.cluster
        last_forced_generation = -1
        while self.clock.now() - start < self.max_virtual_seconds:
            while not self._out_of_time():
                progressed = False
                while not self._out_of_time() and scheduler.schedule_one():
                    progressed = True
                    await self._settle(scheduler)
                await self._settle(scheduler)
                if not progressed and not queue.active_pods():
                    break
            cluster.finish_due_deletions()
            scheduler.cache.cleanup_expired_assumed_pods()
            if queue.active_pods():
                continue
            candidates = []
            if queue.backoff_pods():
                candidates.append(math.floor(self.clock.now()) + 1.0)
            deletion = cluster.next_deletion()
            if deletion is not None:
                candidates.append(deletion)
            timer = self.clock.next_deadline()
            if timer is not None:
                candidates.append(timer)
            if candidates:
                if self._beyond_limit(min(candidates)):
                    break
                self.clock.advance_to(min(candidates))
                cluster.finish_due_deletions()
                queue.flush_backoff_completed()
                continue
            if queue.unschedulable_pods() and cluster.generation != last_forced_generation:
                last_forced_generation = cluster.generation
                flush = self._next_leftover_flush(queue, self.started)
                if self._beyond_limit(flush):
                    break
                self.clock.advance_to(flush)
                queue.flush_unschedulable_leftover()
                continue
            break
        if scheduler.pending_tasks and self._beyond_limit(self._next_due() or math.inf):
            # The run ends where it stands: waits at Permit and grace periods still running
            # are not waited for.
            scheduler.cancel_pending()
        await scheduler.drain()


def _has_pods_to_pop(queue: SchedulingQueue) -> bool:
    """Pods in activeQ or backoffQ, counted without listing them (settling runs after every
    cycle, so a list here would cost a pass over the whole queue per pod)."""
    counts = queue.pending_counts()
    return bool(counts[ACTIVE] or counts[BACKOFF])
