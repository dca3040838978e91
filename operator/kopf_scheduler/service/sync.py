"""Initial listing and periodic resynchronisation of the watched collections.

Scheduling starts only once the cache holds every node and pod (a scheduler with a partial view
double-books capacity). Storage objects are listed before pods, so a pod's claims are known when
its first attempt runs. Watches can also lose deletions across a restart with a fresh listing
(410 Gone), so the store is periodically reconciled against a full LIST: objects the API no
longer has are fed in as deletions, so nothing stays counted twice or forever.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

import structlog

from kopf_scheduler.informer.handlers import ADDED, DELETED, STORAGE_KINDS, EventHandlers

logger = structlog.get_logger("kopf_scheduler.sync")

COLLECTIONS: tuple[tuple[str, str], ...] = (
    ("PriorityClass", "/apis/scheduling.k8s.io/v1/priorityclasses"),
    ("Namespace", "/api/v1/namespaces"),
    ("Node", "/api/v1/nodes"),
    ("PodDisruptionBudget", "/apis/policy/v1/poddisruptionbudgets"),
    ("Service", "/api/v1/services"),
    ("ReplicationController", "/api/v1/replicationcontrollers"),
    ("ReplicaSet", "/apis/apps/v1/replicasets"),
    ("StatefulSet", "/apis/apps/v1/statefulsets"),
    ("StorageClass", "/apis/storage.k8s.io/v1/storageclasses"),
    ("CSIDriver", "/apis/storage.k8s.io/v1/csidrivers"),
    ("CSINode", "/apis/storage.k8s.io/v1/csinodes"),
    ("CSIStorageCapacity", "/apis/storage.k8s.io/v1/csistoragecapacities"),
    ("PersistentVolume", "/api/v1/persistentvolumes"),
    ("PersistentVolumeClaim", "/api/v1/persistentvolumeclaims"),
    ("VolumeAttachment", "/apis/storage.k8s.io/v1/volumeattachments"),
    ("Pod", "/api/v1/pods"),
)


class Lister(Protocol):
    async def list_items(self, path: str) -> list[dict[str, Any]]: ...


def _key(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata") or {}
    namespace = metadata.get("namespace")
    name = metadata.get("name", "")
    return f"{namespace}/{name}" if namespace else name


def _route(handlers: EventHandlers, kind: str) -> Callable[[str, Mapping[str, Any]], None]:
    if kind in ("ReplicationController", "ReplicaSet", "StatefulSet"):
        return lambda event_type, raw: handlers.on_controller(kind, event_type, raw)
    if kind in STORAGE_KINDS:
        return lambda event_type, raw: handlers.on_storage(kind, event_type, raw)
    return {
        "PriorityClass": handlers.on_priority_class,
        "Namespace": handlers.on_namespace,
        "Node": handlers.on_node,
        "PodDisruptionBudget": handlers.on_pdb,
        "Service": handlers.on_service,
        "Pod": handlers.on_pod,
    }[kind]


class Synchronizer:
    """Lists ``collections`` (kind, path) in order; by default every collection the cache needs."""

    def __init__(
        self,
        lister: Lister,
        handlers: EventHandlers,
        collections: tuple[tuple[str, str], ...] = COLLECTIONS,
    ) -> None:
        self._lister = lister
        self._handlers = handlers
        self._collections = collections
        self._seen: dict[str, dict[str, Mapping[str, Any]]] = {kind: {} for kind, _ in collections}
        self.synced = False

    async def list_all(self) -> None:
        """LIST every collection in dependency order and feed it in; then mark the cache synced."""
        for kind, path in self._collections:
            items = await self._lister.list_items(path)
            route = _route(self._handlers, kind)
            fresh: dict[str, Mapping[str, Any]] = {}
            for raw in items:
                fresh[_key(raw)] = raw
                route(ADDED, raw)
            for key, gone in self._seen[kind].items():
                if key not in fresh and self._still_known(kind, key):
                    logger.info("resync_deleted", kind=kind, name=key)
                    route(DELETED, gone)
            self._seen[kind] = fresh
        self.synced = True

    def _still_known(self, kind: str, key: str) -> bool:
        store = self._handlers.store
        if kind == "Pod":
            return key in store.pods or key in store.invalid_pods
        if kind == "Node":
            return self._handlers.get_node(key) is not None
        if kind == "PodDisruptionBudget":
            return key in store.pdbs
        if kind == "PriorityClass":
            return key in store.priority_classes
        if kind in STORAGE_KINDS:
            return STORAGE_KINDS[kind].shelf(store.storage).known(key) is not None
        return True
