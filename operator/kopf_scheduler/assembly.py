"""Build a complete scheduler (cache, queue, profiles, loop) from a configuration and the ports.

The operator, the simulator and the benchmarks all assemble the scheduler here, so they run the
very same scheduling path with the same wiring; only the ports differ.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.cache.cache import DEFAULT_ASSUMED_POD_TTL, Cache
from kopf_scheduler.cache.dra import DraCache
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage_cache import StorageCache
from kopf_scheduler.config.profiles import build_profile_plugins
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.framework.handle import Handle, PodGroupLister
from kopf_scheduler.framework.runtime import Framework
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.ports import (
    Binder,
    Clock,
    EventRecorder,
    Metrics,
    NullMetrics,
    PodDeleter,
    PodStatusWriter,
    ResourceClaimWriter,
    StorageWriter,
)
from kopf_scheduler.queue.nominator import Nominator
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue
from kopf_scheduler.scheduler.algorithm import Algorithm
from kopf_scheduler.scheduler.binding_cycle import DEFAULT_MAX_BINDING_CYCLES
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.scheduler.fast_path.victim_search import VictimSearch
from kopf_scheduler.scheduler.loop import Scheduler
from kopf_scheduler.scheduler.tasks import BackgroundTasks


@dataclass
class Ports:
    clock: Clock
    binder: Binder
    status_writer: PodStatusWriter
    pod_deleter: PodDeleter
    event_recorder: EventRecorder
    metrics: Metrics | None = None
    storage_writer: StorageWriter | None = None
    claim_writer: ResourceClaimWriter | None = None


@dataclass
class ClusterView:
    """Read access to the watch caches that plugins and failure handling consult."""

    get_pod: Callable[[str], Pod | None]
    pdbs: Callable[[], list[PodDisruptionBudget]]
    storage: StorageCache = field(default_factory=StorageCache)
    pod_groups: PodGroupLister | None = None
    dra: DraCache = field(default_factory=DraCache)
    """Empty when no profile enables DynamicResources (nothing of it is watched then)."""


def build_scheduler(
    config: SchedulerConfig,
    ports: Ports,
    view: ClusterView,
    *,
    seed: int | None = None,
    on_attempt: Callable[[AttemptRecord], None] | None = None,
    assumed_pod_ttl: float = DEFAULT_ASSUMED_POD_TTL,
    workload_selectors: Any = None,
    max_binding_cycles: int = DEFAULT_MAX_BINDING_CYCLES,
    tasks: BackgroundTasks | None = None,
    active: bool = True,
) -> Scheduler:
    """Wire a scheduler; must be called from within the running event loop.

    Every object is built whole, with what it needs passed in. Two knots are tied with callables
    that name an object built a few lines further down: the plugins reach the queue (activating
    pods, the nominator's view of queued pods) while the queue runs the plugins (PreEnqueue,
    QueueSort, queueing hints). Neither callable runs before the queue exists.

    ``tasks`` runs the background work, for a caller whose own writes (explanations) should be
    waited for with the scheduler's; ``active`` False builds a follower that pops nothing until
    made the leader.
    """
    rng = random.Random(seed)
    metrics = ports.metrics if ports.metrics is not None else NullMetrics()
    clock = ports.clock
    snapshot = Snapshot()
    cache = Cache(clock.now, assumed_pod_ttl)
    tasks = tasks if tasks is not None else BackgroundTasks()
    wakeup = asyncio.Event()
    algorithm = Algorithm(
        rng, config.percentage_of_nodes_to_score, fast_path=config.extensions.fast_path
    )
    accelerator = VictimSearch(algorithm.fast_path) if algorithm.fast_path is not None else None
    queue: SchedulingQueue  # built after the profiles, which these two reach it through

    def queued_pod(key: str) -> Pod | None:
        return queue.queued_pod(key)

    def activate(pods: list[Pod]) -> None:
        queue.activate(pods)

    nominator = Nominator(get_pod=view.get_pod, lookup=queued_pod)
    frameworks: dict[str, Framework] = {}
    for index, profile in enumerate(config.profiles):
        handle = Handle(
            snapshot=snapshot,
            nominator=nominator,
            now=clock.now,
            sleep=clock.sleep,
            rng=rng,
            metrics=metrics,
            scheduler_name=profile.scheduler_name,
            get_pod=view.get_pod,
            pdbs=view.pdbs,
            activate=activate,
            spawn=tasks.spawn,
            binder=ports.binder,
            status_writer=ports.status_writer,
            pod_deleter=ports.pod_deleter,
            event_recorder=ports.event_recorder,
            storage=view.storage,
            storage_writer=ports.storage_writer,
            workload_selectors=workload_selectors,
            pod_groups=view.pod_groups,
            dra=view.dra,
            claim_writer=ports.claim_writer,
        )
        frameworks[profile.scheduler_name] = Framework(
            profile.scheduler_name,
            build_profile_plugins(profile, handle, index),
            handle,
            profile.percentage_of_nodes_to_score,
            dry_run_accelerator=accelerator,
        )
    queue = SchedulingQueue(
        frameworks,
        now=clock.now,
        on_activity=wakeup.set,
        get_pod=view.get_pod,
        metrics=metrics,
        pod_initial_backoff=config.pod_initial_backoff_seconds,
        pod_max_backoff=config.pod_max_backoff_seconds,
        nominator=nominator,
    )
    return Scheduler(
        profiles=frameworks,
        cache=cache,
        queue=queue,
        snapshot=snapshot,
        algorithm=algorithm,
        clock=clock,
        status_writer=ports.status_writer,
        event_recorder=ports.event_recorder,
        get_pod=view.get_pod,
        metrics=metrics,
        on_attempt=on_attempt,
        tasks=tasks,
        wakeup=wakeup,
        nomination_hygiene=config.extensions.nomination_hygiene,
        max_binding_cycles=max_binding_cycles,
        active=active,
    )
