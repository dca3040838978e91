"""The storage objects the volume plugins read, with the assumptions of volume binding on top.

Claims, volumes, classes, CSINodes, CSIDrivers, CSIStorageCapacities and VolumeAttachments are
kept as the watches deliver them (what upstream calls listers). Claims and volumes additionally
carry *assumptions*: when VolumeBinding reserves a static PV for a claim, or picks a node for a
claim to be provisioned, it assumes the changed object here before any API write, so the next
pods of the same burst see the PV as taken. An assumption stands until the watch delivers a
newer version of the object (the API server has caught up with the write) or until the plugin
restores the object (Unreserve, a failed write). This is upstream's assume cache: an informer
event with a resourceVersion not newer than the assumed one is ignored for the reading side.

Indexes derived from the storage objects (the volumes attached per node that NodeVolumeLimits
keeps) subscribe as :class:`StorageListener` and hear the kind and key of every object whose API
version was added, changed or deleted. The claim and volume shelves tell them by themselves; the
other shelves are plain dictionaries, and whoever writes one calls :meth:`StorageCache.changed`
after the write (the watch handlers do). Assumptions change no API version and are not told.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, Protocol, TypeVar

from kopf_scheduler.model.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
    resource_version_newer,
)


class _Versioned(Protocol):
    @property
    def key(self) -> str: ...

    @property
    def resource_version(self) -> str: ...


T = TypeVar("T", bound=_Versioned)

CLAIM_KIND = "PersistentVolumeClaim"
VOLUME_KIND = "PersistentVolume"
STORAGE_CLASS_KIND = "StorageClass"
CSI_NODE_KIND = "CSINode"
CSI_DRIVER_KIND = "CSIDriver"
CSI_STORAGE_CAPACITY_KIND = "CSIStorageCapacity"
VOLUME_ATTACHMENT_KIND = "VolumeAttachment"


class StorageListener(Protocol):
    """An index kept in step with the storage objects as the API reports them."""

    def storage_changed(self, kind: str, key: str) -> None:
        """The API object ``kind``/``key`` was added, changed or deleted."""


class AssumeConflictError(Exception):
    """An assumption based on an older version than the one already known."""


class AssumeCache(Generic[T]):
    """The latest object per key (assumed or from the API) and the latest API object."""

    def __init__(self, on_change: Callable[[str], None] | None = None) -> None:
        self._latest: dict[str, T] = {}
        self._api: dict[str, T] = {}
        self._on_change = on_change
        """Called with the key of every API object added, changed or deleted."""

    def get(self, key: str) -> T | None:
        """The object as the scheduler should see it: the assumption if one stands."""
        return self._latest.get(key)

    def get_api_object(self, key: str) -> T | None:
        """The object as the API server last said it was."""
        return self._api.get(key)

    def values(self) -> Iterator[T]:
        return iter(self._latest.values())

    def __len__(self) -> int:
        return len(self._latest)

    def upsert(self, obj: T) -> None:
        """A watch event (add or update): kept unless an assumption is at least as new."""
        stored = self._latest.get(obj.key)
        if stored is not None and not resource_version_newer(
            obj.resource_version, stored.resource_version
        ):
            return
        self._latest[obj.key] = obj
        self._api[obj.key] = obj
        if self._on_change is not None:
            self._on_change(obj.key)

    def delete(self, key: str) -> None:
        self._latest.pop(key, None)
        known = self._api.pop(key, None)
        if known is not None and self._on_change is not None:
            self._on_change(key)

    def assume(self, obj: T) -> None:
        """Make ``obj`` what the scheduler sees until the API catches up or it is restored."""
        stored = self._latest.get(obj.key)
        if stored is None:
            raise KeyError(obj.key)
        if (
            obj.resource_version
            and stored.resource_version
            and resource_version_newer(stored.resource_version, obj.resource_version)
        ):
            raise AssumeConflictError(
                f"{obj.key} is out of sync (version {obj.resource_version}, "
                f"stored {stored.resource_version})"
            )
        self._latest[obj.key] = obj

    def restore(self, key: str) -> None:
        """Drop the assumption on ``key``: back to the latest API object."""
        api_object = self._api.get(key)
        if api_object is None:
            self._latest.pop(key, None)
        else:
            self._latest[key] = api_object

    def is_assumed(self, key: str) -> bool:
        return self._latest.get(key) is not self._api.get(key)


class StorageCache:
    """Every storage object the volume plugins read; fed by the watches (or the simulator)."""

    def __init__(self) -> None:
        self._listeners: list[StorageListener] = []
        self.claims: AssumeCache[PersistentVolumeClaim] = AssumeCache(
            lambda key: self.changed(CLAIM_KIND, key)
        )
        """By ``namespace/name``."""
        self.volumes: AssumeCache[PersistentVolume] = AssumeCache(
            lambda key: self.changed(VOLUME_KIND, key)
        )
        """By name."""
        self.classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}
        """By ``namespace/name``."""
        self.attachments: dict[str, VolumeAttachment] = {}

    def subscribe(self, listener: StorageListener) -> None:
        """Tell ``listener`` about every API object changed from now on."""
        self._listeners.append(listener)

    def changed(self, kind: str, key: str) -> None:
        """Tell the listeners that the API object ``kind``/``key`` was added, changed or
        deleted (``kind`` is one of the constants above)."""
        for listener in self._listeners:
            listener.storage_changed(kind, key)

    def claim(self, namespace: str, name: str) -> PersistentVolumeClaim | None:
        return self.claims.get(f"{namespace}/{name}")

    def volume(self, name: str) -> PersistentVolume | None:
        return self.volumes.get(name)

    def storage_class(self, name: str) -> StorageClass | None:
        return self.classes.get(name)

    def csi_node(self, node_name: str) -> CSINode | None:
        return self.csi_nodes.get(node_name)

    def csi_driver(self, name: str) -> CSIDriver | None:
        return self.csi_drivers.get(name)

    def volumes_of_class(self, class_name: str) -> list[PersistentVolume]:
        """The volumes (as the scheduler sees them) whose class is ``class_name``."""
        return [pv for pv in self.volumes.values() if pv.storage_class_name == class_name]
