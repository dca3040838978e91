"""Storage objects: the storage cache the volume plugins read, and each change's cluster event.

Claims, volumes, classes, CSI objects and attachments each live on a shelf of the storage cache;
each change is the kind's add, update or delete event. Claims and volumes sit on the assume
cache, where a watch event never overrides an assumption at least as new. A version not newer
than the one known (a relist, a stale listing) changes nothing; a delete of an object never known
raises nothing; a malformed object is logged and left out of the cache, as if it did not exist.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from kopf_scheduler.cache.storage_cache import (
    CLAIM_KIND,
    CSI_DRIVER_KIND,
    CSI_NODE_KIND,
    CSI_STORAGE_CAPACITY_KIND,
    STORAGE_CLASS_KIND,
    VOLUME_ATTACHMENT_KIND,
    VOLUME_KIND,
    AssumeCache,
    StorageCache,
)
from kopf_scheduler.framework.events import ActionType, EventResource, object_event
from kopf_scheduler.informer.raw_metadata import object_key, resource_version
from kopf_scheduler.model import storage as storage_model
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.scheduler.loop import Scheduler

logger = structlog.get_logger("kopf_scheduler.informer")


class StorageObject(Protocol):
    """What the handlers read of any storage view."""

    @property
    def key(self) -> str: ...

    @property
    def resource_version(self) -> str: ...


class _Shelf(Protocol):
    """Where one kind lives in the storage cache, as the watch sees it."""

    def known(self, key: str) -> StorageObject | None:
        """The object as the API server last delivered it."""

    def put(self, obj: Any) -> None: ...

    def drop(self, key: str) -> None: ...


class _AssumedShelf:
    """Claims and volumes: a watch event never overrides an assumption at least as new."""

    def __init__(self, cache: AssumeCache[Any]) -> None:
        self._cache = cache

    def known(self, key: str) -> StorageObject | None:
        found: StorageObject | None = self._cache.get_api_object(key)
        return found

    def put(self, obj: Any) -> None:
        self._cache.upsert(obj)

    def drop(self, key: str) -> None:
        self._cache.delete(key)


class _DictShelf:
    """The other kinds: a dictionary of the cache, and the cache's listeners told of writes."""

    def __init__(self, storage: StorageCache, objects: dict[str, Any], kind: str) -> None:
        self._storage = storage
        self._objects = objects
        self._kind = kind

    def known(self, key: str) -> StorageObject | None:
        found: StorageObject | None = self._objects.get(key)
        return found

    def put(self, obj: Any) -> None:
        self._objects[obj.key] = obj
        self._storage.changed(self._kind, obj.key)

    def drop(self, key: str) -> None:
        if self._objects.pop(key, None) is not None:
            self._storage.changed(self._kind, key)


@dataclass(frozen=True)
class _StorageKind:
    parse: Callable[[Mapping[str, Any]], StorageObject]
    resource: EventResource
    shelf: Callable[[StorageCache], _Shelf]
    namespaced: bool = False


STORAGE_KINDS: Mapping[str, _StorageKind] = {
    CLAIM_KIND: _StorageKind(
        storage_model.PersistentVolumeClaim,
        EventResource.PERSISTENT_VOLUME_CLAIM,
        lambda storage: _AssumedShelf(storage.claims),
        namespaced=True,
    ),
    VOLUME_KIND: _StorageKind(
        storage_model.PersistentVolume,
        EventResource.PERSISTENT_VOLUME,
        lambda storage: _AssumedShelf(storage.volumes),
    ),
    STORAGE_CLASS_KIND: _StorageKind(
        storage_model.StorageClass,
        EventResource.STORAGE_CLASS,
        lambda storage: _DictShelf(storage, storage.classes, STORAGE_CLASS_KIND),
    ),
    CSI_NODE_KIND: _StorageKind(
        storage_model.CSINode,
        EventResource.CSI_NODE,
        lambda storage: _DictShelf(storage, storage.csi_nodes, CSI_NODE_KIND),
    ),
    CSI_DRIVER_KIND: _StorageKind(
        storage_model.CSIDriver,
        EventResource.CSI_DRIVER,
        lambda storage: _DictShelf(storage, storage.csi_drivers, CSI_DRIVER_KIND),
    ),
    CSI_STORAGE_CAPACITY_KIND: _StorageKind(
        storage_model.CSIStorageCapacity,
        EventResource.CSI_STORAGE_CAPACITY,
        lambda storage: _DictShelf(storage, storage.capacities, CSI_STORAGE_CAPACITY_KIND),
        namespaced=True,
    ),
    VOLUME_ATTACHMENT_KIND: _StorageKind(
        storage_model.VolumeAttachment,
        EventResource.VOLUME_ATTACHMENT,
        lambda storage: _DictShelf(storage, storage.attachments, VOLUME_ATTACHMENT_KIND),
    ),
}
"""Every storage kind the scheduler watches: its view, its cluster events, its cache.

Upstream registers a kind's add, update or delete handler only when an enabled plugin asked for
that event; here every change is raised and the queue drops events no plugin is interested in,
which comes to the same moves.
"""


class StorageEvents:
    """The watch events of one storage ``kind`` (a key of :data:`STORAGE_KINDS`)."""

    def __init__(self, scheduler: Scheduler, storage: StorageCache, kind: str) -> None:
        storage_kind = STORAGE_KINDS.get(kind)
        if storage_kind is None:
            raise ValueError(f"not a storage kind: {kind!r}")
        self._scheduler = scheduler
        self._kind = kind
        self._storage_kind = storage_kind
        self._shelf = storage_kind.shelf(storage)

    def applied(self, raw: Mapping[str, Any]) -> None:
        key = object_key(raw, self._storage_kind.namespaced)
        old = self._shelf.known(key)
        version = resource_version(raw)
        if (
            old is not None
            and version
            and not storage_model.resource_version_newer(version, old.resource_version)
        ):
            return
        new = self._parse(key, raw)
        if new is None:
            self._shelf.drop(key)
            return
        self._shelf.put(new)
        action = ActionType.ADD if old is None else ActionType.UPDATE_GENERIC
        self._scheduler.on_cluster_event(
            object_event(self._storage_kind.resource, action), old, new
        )

    def deleted(self, raw: Mapping[str, Any]) -> None:
        key = object_key(raw, self._storage_kind.namespaced)
        old = self._shelf.known(key)
        if old is None:
            return
        self._shelf.drop(key)
        gone = self._parse(key, raw) or old
        event = object_event(self._storage_kind.resource, ActionType.DELETE)
        self._scheduler.on_cluster_event(event, gone, None)

    def _parse(self, key: str, raw: Mapping[str, Any]) -> StorageObject | None:
        try:
            return self._storage_kind.parse(raw)
        except InvalidObjectError as error:
            logger.error(
                "malformed_storage_object_ignored",
                kind=self._kind,
                key=key,
                field=error.field,
                reason=error.reason,
            )
            return None
