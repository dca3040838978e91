"""Route each kind's watch events to its handler, as kube-scheduler's ``eventhandlers.go`` does.

Every watcher (kopf's watches, the reflectors, the listings and the resyncs, the simulator)
delivers ``(event_type, raw object)``; :meth:`EventHandlers.route` gives each kind of
:data:`~kopf_scheduler.informer.watched_kinds.WATCHED_KINDS` its one handler. The handlers, one
module per kind (``pod_events``, ``node_events``, ``storage_events``, ...), keep the store the
plugins read and tell the scheduler what changed through its public ``on_...`` methods; the
scheduler's queue turns each change into the cluster event that may let rejected pods retry.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from kopf_scheduler.framework.events import EventResource
from kopf_scheduler.informer.dra_events import DeviceObjectEvents, ResourceClaimEvents
from kopf_scheduler.informer.namespace_events import NamespaceEvents
from kopf_scheduler.informer.node_events import NodeEvents
from kopf_scheduler.informer.pod_events import PodEvents
from kopf_scheduler.informer.pod_group_events import PodGroupEvents
from kopf_scheduler.informer.policy_events import PodDisruptionBudgetEvents, PriorityClassEvents
from kopf_scheduler.informer.storage_events import STORAGE_KINDS, StorageEvents
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.workloads import WorkloadIndex
from kopf_scheduler.model.node import Node
from kopf_scheduler.scheduler.loop import Scheduler

EventHandler = Callable[[str, Mapping[str, Any]], None]
"""Takes one watch event of a kind: ``(event_type, raw object)``."""

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

_WORKLOAD_CONTROLLERS = ("ReplicationController", "ReplicaSet", "StatefulSet")


class KindEvents(Protocol):
    """One kind's handler: an object added or modified is the object as it now is."""

    def applied(self, raw: Mapping[str, Any]) -> None: ...

    def deleted(self, raw: Mapping[str, Any]) -> None: ...


def _by_event_type(events: KindEvents) -> EventHandler:
    applied, deleted = events.applied, events.deleted

    def handle(event_type: str, raw: Mapping[str, Any]) -> None:
        if event_type == DELETED:
            deleted(raw)
        else:
            applied(raw)

    return handle


class EventHandlers:
    """Every kind's handler, over one scheduler and the ``store`` its plugins read;
    ``workloads`` takes the Services and controllers default topology spreading reads."""

    def __init__(
        self,
        scheduler: Scheduler,
        store: Store,
        workloads: WorkloadIndex | None = None,
    ) -> None:
        self.store = store
        self._scheduler = scheduler
        self._workloads = workloads
        dra = store.dra
        self._kinds: dict[str, KindEvents] = {
            "PriorityClass": PriorityClassEvents(store),
            "Namespace": NamespaceEvents(scheduler),
            "Node": NodeEvents(scheduler),
            "PodDisruptionBudget": PodDisruptionBudgetEvents(store),
            "PodGroup": PodGroupEvents(scheduler, store.pod_groups),
            "DeviceClass": DeviceObjectEvents(scheduler, dra.classes, EventResource.DEVICE_CLASS),
            "ResourceSlice": DeviceObjectEvents(
                scheduler, dra.slices, EventResource.RESOURCE_SLICE
            ),
            "ResourceClaim": ResourceClaimEvents(scheduler, dra),
            "Pod": PodEvents(scheduler, store),
            **{kind: StorageEvents(scheduler, store.storage, kind) for kind in STORAGE_KINDS},
        }

    def route(self, kind: str) -> EventHandler:
        """The handler of a kind of :data:`~kopf_scheduler.informer.watched_kinds.WATCHED_KINDS`:
        every watcher and the listings deliver ``(event_type, raw)`` through it."""
        if kind == "Service":
            return self._on_service
        if kind in _WORKLOAD_CONTROLLERS:
            return lambda event_type, raw: self._on_controller(kind, event_type, raw)
        return _by_event_type(self._kinds[kind])

    def get_node(self, name: str) -> Node | None:
        """The node as the cache last saw it (``None`` once deleted)."""
        return self._scheduler.node(name)

    def _on_service(self, event_type: str, raw: Mapping[str, Any]) -> None:
        if self._workloads is not None:
            self._workloads.on_service(event_type, raw)

    def _on_controller(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
        if self._workloads is not None:
            self._workloads.on_controller(kind, event_type, raw)
