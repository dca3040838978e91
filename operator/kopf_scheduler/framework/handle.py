"""What plugins may use besides their own arguments: the snapshot, the nominator, time, chance,
the storage objects, the API ports, and a way to reach back into the framework (preemption runs
filters itself).

The scheduler builds one Handle per profile and fills it before plugins are constructed.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage import StorageCache
from kopf_scheduler.framework.pod_nominator import NoNominations, PodNominator
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.ports import Metrics, NullMetrics

if TYPE_CHECKING:
    from kopf_scheduler.framework.runtime import Framework
    from kopf_scheduler.model.pod import Pod
    from kopf_scheduler.ports import (
        Binder,
        EventRecorder,
        PodDeleter,
        PodStatusWriter,
        StorageWriter,
    )


class Handle:
    """Shared services for the plugins of one profile."""

    def __init__(
        self,
        *,
        snapshot: Snapshot | None = None,
        nominator: PodNominator | None = None,
        now: Callable[[], float] | None = None,
        sleep: Callable[[float], Coroutine[Any, Any, None]] | None = None,
        rng: random.Random | None = None,
        metrics: Metrics | None = None,
        scheduler_name: str = "",
    ) -> None:
        self.snapshot: Snapshot = snapshot if snapshot is not None else Snapshot()
        self.nominator: PodNominator = nominator if nominator is not None else NoNominations()
        self.now: Callable[[], float] = now if now is not None else (lambda: 0.0)
        self.sleep: Callable[[float], Coroutine[Any, Any, None]] = (
            sleep if sleep is not None else asyncio.sleep
        )
        """Wait on the same clock as ``now`` (the scheduler's Clock port; virtual in simulation)."""
        self.rng: random.Random = rng if rng is not None else random.Random(0)
        self.metrics: Metrics = metrics if metrics is not None else NullMetrics()
        self.scheduler_name = scheduler_name
        self.framework: Framework | None = None
        self.pdbs: Callable[[], list[PodDisruptionBudget]] = list
        self.get_pod: Callable[[str], Pod | None] = lambda key: None
        """Look a pod up by ``namespace/name`` in the watch cache (the informer's lister)."""
        self.activate: Callable[[list[Pod]], None] = lambda pods: None
        """Move pods straight to the active queue (they are waiting for something that ended)."""
        self.binder: Binder | None = None
        self.status_writer: PodStatusWriter | None = None
        self.pod_deleter: PodDeleter | None = None
        self.event_recorder: EventRecorder | None = None
        self.storage: StorageCache = StorageCache()
        """Claims, volumes and the other storage objects, with volume binding's assumptions."""
        self.storage_writer: StorageWriter | None = None
        """Where volume binding writes PV claimRefs and claims' selected-node annotations."""
        self.workload_selectors: Any = None
        """Selectors of the workloads owning or selecting a pod (default topology spreading);
        ``None`` when the scheduler does not watch Services and controllers."""
        self.spawn: Callable[[Coroutine[Any, Any, None]], None] = _close_unscheduled
        """Run a coroutine in the background (async preemption); set by the scheduler loop."""


def _close_unscheduled(coroutine: Coroutine[Any, Any, None]) -> None:
    coroutine.close()
    raise RuntimeError("no background task runner is attached to this handle")
