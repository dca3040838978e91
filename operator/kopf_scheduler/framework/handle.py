"""What plugins may use besides their own arguments: the snapshot, the nominator, time, chance,
the storage objects, the PodGroups, the objects of dynamic resource allocation, the API ports,
and a way to reach back into the framework (preemption runs filters itself, gang scheduling
allows and rejects the pods waiting at Permit).

The scheduler builds one Handle per profile, whole, before the profile's plugins are built
(``assembly.py``).
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Collection, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

from kopf_scheduler.cache.dra import DraCache
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage_cache import StorageCache
from kopf_scheduler.framework.pod_nominator import NoNominations, PodNominator
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.ports import Metrics, NullMetrics

if TYPE_CHECKING:
    from kopf_scheduler.framework.runtime import Framework, WaitingPod
    from kopf_scheduler.model.pod import Pod
    from kopf_scheduler.ports import (
        Binder,
        EventRecorder,
        PodDeleter,
        PodStatusWriter,
        ResourceClaimWriter,
        StorageWriter,
    )


class PodGroupLister(Protocol):
    """The PodGroups the scheduler watches, and the pods that name each one."""

    def get(self, key: str) -> PodGroup | None:
        """The PodGroup ``namespace/name``, or ``None`` when the API server has none."""

    def members(self, key: str) -> Collection[Pod]:
        """The known pods (pending, assumed or bound, not terminal) labelled with group ``key``."""


class NoPodGroups:
    """The lister of a scheduler that does not watch PodGroups: there are none."""

    def get(self, key: str) -> PodGroup | None:
        return None

    def members(self, key: str) -> Collection[Pod]:
        return ()


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
        get_pod: Callable[[str], Pod | None] | None = None,
        pdbs: Callable[[], list[PodDisruptionBudget]] | None = None,
        activate: Callable[[list[Pod]], None] | None = None,
        spawn: Callable[[Coroutine[Any, Any, None]], None] | None = None,
        binder: Binder | None = None,
        status_writer: PodStatusWriter | None = None,
        pod_deleter: PodDeleter | None = None,
        event_recorder: EventRecorder | None = None,
        storage: StorageCache | None = None,
        storage_writer: StorageWriter | None = None,
        workload_selectors: Any = None,
        pod_groups: PodGroupLister | None = None,
        dra: DraCache | None = None,
        claim_writer: ResourceClaimWriter | None = None,
    ) -> None:
        """Every service is given here; what is left out is absent (tests leave out most)."""
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
        """The profile's framework, which names itself here as it is built around the handle."""
        self.pdbs: Callable[[], list[PodDisruptionBudget]] = pdbs if pdbs is not None else list
        self.get_pod: Callable[[str], Pod | None] = (
            get_pod if get_pod is not None else (lambda key: None)
        )
        """Look a pod up by ``namespace/name`` in the watch cache (the informer's lister)."""
        self.activate: Callable[[list[Pod]], None] = (
            activate if activate is not None else (lambda pods: None)
        )
        """Move pods straight to the active queue (they are waiting for something that ended)."""
        self.binder = binder
        self.status_writer = status_writer
        self.pod_deleter = pod_deleter
        self.event_recorder = event_recorder
        self.storage: StorageCache = storage if storage is not None else StorageCache()
        """Claims, volumes and the other storage objects, with volume binding's assumptions."""
        self.storage_writer = storage_writer
        """Where volume binding writes PV claimRefs and claims' selected-node annotations."""
        self.workload_selectors = workload_selectors
        """Selectors of the workloads owning or selecting a pod (default topology spreading);
        ``None`` when the scheduler does not watch Services and controllers."""
        self.pod_groups: PodGroupLister = pod_groups if pod_groups is not None else NoPodGroups()
        """PodGroups and their member pods (gang scheduling)."""
        self.dra: DraCache = dra if dra is not None else DraCache()
        """DeviceClasses, ResourceSlices, ResourceClaims and in-flight allocations (empty when
        no profile enables DynamicResources: nothing of it is watched then)."""
        self.claim_writer = claim_writer
        """Where DynamicResources writes claims' allocations and reservations."""
        self.spawn: Callable[[Coroutine[Any, Any, None]], None] = (
            spawn if spawn is not None else _close_unscheduled
        )
        """Run a coroutine in the background (async preemption): the scheduler's task runner."""

    def waiting_pods(self) -> list[WaitingPod]:
        """The profile's pods waiting at Permit (upstream's ``IterateOverWaitingPods``)."""
        return self.framework.waiting_pods() if self.framework is not None else []


def _close_unscheduled(coroutine: Coroutine[Any, Any, None]) -> None:
    coroutine.close()
    raise RuntimeError("no background task runner is attached to this handle")
