"""Build a complete scheduler (cache, queue, profiles, loop) from a configuration and the ports.

The operator, the simulator and the benchmarks all assemble the scheduler here, so they run the
very same scheduling path with the same wiring; only the ports differ.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from kopf_scheduler.cache.cache import DEFAULT_ASSUMED_POD_TTL, Cache
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage import StorageCache
from kopf_scheduler.config.profiles import build_profile_plugins
from kopf_scheduler.config.types import SchedulerConfig
from kopf_scheduler.framework.handle import Handle
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
    StorageWriter,
)
from kopf_scheduler.queue.scheduling_queue import SchedulingQueue
from kopf_scheduler.scheduler.algorithm import Algorithm
from kopf_scheduler.scheduler.explain import AttemptRecord
from kopf_scheduler.scheduler.fast_path.victims import VictimSearch
from kopf_scheduler.scheduler.loop import Scheduler


@dataclass
class Ports:
    clock: Clock
    binder: Binder
    status_writer: PodStatusWriter
    pod_deleter: PodDeleter
    event_recorder: EventRecorder
    metrics: Metrics | None = None
    storage_writer: StorageWriter | None = None


@dataclass
class ClusterView:
    """Read access to the watch caches that plugins and failure handling consult."""

    get_pod: Callable[[str], Pod | None]
    pdbs: Callable[[], list[PodDisruptionBudget]]
    storage: StorageCache = field(default_factory=StorageCache)


def build_scheduler(
    config: SchedulerConfig,
    ports: Ports,
    view: ClusterView,
    *,
    seed: int | None = None,
    on_attempt: Callable[[AttemptRecord], None] | None = None,
    assumed_pod_ttl: float = DEFAULT_ASSUMED_POD_TTL,
    workload_selectors: Any = None,
) -> Scheduler:
    """Wire a scheduler; must be called from within the running event loop."""
    rng = random.Random(seed)
    metrics = ports.metrics if ports.metrics is not None else NullMetrics()
    clock = ports.clock
    snapshot = Snapshot()
    cache = Cache(clock.now, assumed_pod_ttl)
    handles: dict[str, Handle] = {}
    frameworks: dict[str, Framework] = {}
    for index, profile in enumerate(config.profiles):
        handle = Handle(
            snapshot=snapshot,
            now=clock.now,
            sleep=clock.sleep,
            rng=rng,
            metrics=metrics,
            scheduler_name=profile.scheduler_name,
        )
        handle.binder = ports.binder
        handle.status_writer = ports.status_writer
        handle.pod_deleter = ports.pod_deleter
        handle.event_recorder = ports.event_recorder
        handle.storage = view.storage
        handle.storage_writer = ports.storage_writer
        handle.get_pod = view.get_pod
        handle.pdbs = view.pdbs
        handle.workload_selectors = workload_selectors
        plugins = build_profile_plugins(profile, handle, index)
        percentage = profile.percentage_of_nodes_to_score
        frameworks[profile.scheduler_name] = Framework(
            profile.scheduler_name, plugins, handle, percentage
        )
        handles[profile.scheduler_name] = handle

    scheduler_ref: list[Scheduler] = []

    def on_activity() -> None:
        if scheduler_ref:
            scheduler_ref[0].notify()

    queue = SchedulingQueue(
        frameworks,
        now=clock.now,
        on_activity=on_activity,
        get_pod=view.get_pod,
        metrics=metrics,
        pod_initial_backoff=config.pod_initial_backoff_seconds,
        pod_max_backoff=config.pod_max_backoff_seconds,
    )
    scheduler = Scheduler(
        profiles=frameworks,
        cache=cache,
        queue=queue,
        snapshot=snapshot,
        algorithm=Algorithm(
            rng, config.percentage_of_nodes_to_score, fast_path=config.extensions.fast_path
        ),
        clock=clock,
        status_writer=ports.status_writer,
        event_recorder=ports.event_recorder,
        get_pod=view.get_pod,
        metrics=metrics,
        on_attempt=on_attempt,
    )
    scheduler.nominations.enabled = config.extensions.nomination_hygiene
    fast_path = scheduler.algorithm.fast_path
    if fast_path is not None:
        accelerator = VictimSearch(fast_path)
        for framework in frameworks.values():
            framework.dry_run_accelerator = accelerator
    scheduler_ref.append(scheduler)
    for handle in handles.values():
        handle.nominator = queue.nominator
        handle.activate = queue.activate
        handle.spawn = scheduler.spawn
    return scheduler
