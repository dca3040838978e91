"""The storage objects the volume plugins read, with the assumptions of volume binding on top.

Claims, volumes, classes, CSINodes, CSIDrivers, CSIStorageCapacities and VolumeAttachments are
kept as the watches deliver them (what upstream calls listers). Claims and volumes additionally
carry *assumptions*: when VolumeBinding reserves a static PV for a claim, or picks a node for a
claim to be provisioned, it assumes the changed object here before any API write, so the next
pods of the same burst see the PV as taken. An assumption stands until the watch delivers a
newer version of the object (the API server has caught up with the write) or until the plugin
restores the object (Unreserve, a failed write). This is upstream's assume cache: an informer
event with a resourceVersion not newer than the assumed one is ignored for the reading side.
"""

from __future__ import annotations

from collections.abc import Iterator
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


class AssumeConflictError(Exception):
    """An assumption based on an older version than the one already known."""


class AssumeCache(Generic[T]):
    """The latest object per key (assumed or from the API) and the latest API object."""

    def __init__(self) -> None:
        self._latest: dict[str, T] = {}
        self._api: dict[str, T] = {}

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

    def delete(self, key: str) -> None:
        self._latest.pop(key, None)
        self._api.pop(key, None)

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
        self.claims: AssumeCache[PersistentVolumeClaim] = AssumeCache()
        """By ``namespace/name``."""
        self.volumes: AssumeCache[PersistentVolume] = AssumeCache()
        """By name."""
        self.classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.capacities: dict[str, CSIStorageCapacity] = {}
        """By ``namespace/name``."""
        self.attachments: dict[str, VolumeAttachment] = {}

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
