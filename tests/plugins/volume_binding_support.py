"""Test support for VolumeBinding: storage fixtures, the plugin on a handle, a fake API writer
and a clock the tests drive.

The storage cache plays both the scheduler's cache and, through its API side, the API server as
the watches report it: :class:`FakeStorageWriter` accepts a write only for the resourceVersion the
cache's API side holds (a full update), gives it the next version and, unless told to hold it
back, delivers it straight away as the watch would. :class:`FakeClock` advances time by exactly
what is slept and runs the actions scheduled for the times it reaches, so a test can play the PV
controller between two polls of PreBind.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.cache.snapshot import Snapshot
from kopf_scheduler.cache.storage_cache import (
    CSI_DRIVER_KIND,
    CSI_NODE_KIND,
    CSI_STORAGE_CAPACITY_KIND,
    STORAGE_CLASS_KIND,
    StorageCache,
)
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.status import Status
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from kopf_scheduler.plugins import volume_binding
from kopf_scheduler.plugins.volume_binding.plugin import STATE_KEY, VolumeBinding
from kopf_scheduler.ports import ApiError, ConflictError, NotFoundError
from tests.builders import NodeBuilder, make_node, node_info
from tests.clock import FakeClock
from tests.storage_builders import (
    ClaimBuilder,
    ClassBuilder,
    VolumeBuilder,
    make_class,
    next_version,
)

NODE_KEY = "nodeKey"
"""The node label the static volumes' affinity and the classes' topologies use."""

WAIT = "wait"
"""WaitForFirstConsumer, no provisioner: static volumes only."""
IMMEDIATE = "immediate"
PROVISIONED = "wait-provisioned"
"""WaitForFirstConsumer with a provisioner allowed on node1 (and a reference value)."""
TOPOLOGY_MISMATCH = "topology-mismatch"
"""WaitForFirstConsumer with a provisioner allowed only where no node is."""
PROVISIONER = "example.com/csi"

StorageObject = (
    PersistentVolumeClaim
    | PersistentVolume
    | StorageClass
    | CSINode
    | CSIDriver
    | CSIStorageCapacity
    | ClaimBuilder
    | VolumeBuilder
    | ClassBuilder
)


def standard_classes() -> list[StorageClass]:
    return [
        make_class(WAIT).wait_for_first_consumer().storage_class(),
        make_class(IMMEDIATE).storage_class(),
        make_class(PROVISIONED)
        .wait_for_first_consumer()
        .provisioner(PROVISIONER)
        .allowed_topology(NODE_KEY, "node1", "reference-value")
        .storage_class(),
        make_class(TOPOLOGY_MISMATCH)
        .wait_for_first_consumer()
        .provisioner(PROVISIONER)
        .allowed_topology(NODE_KEY, "reference-value")
        .storage_class(),
    ]


def add(storage: StorageCache, *objects: StorageObject) -> StorageCache:
    """Put objects into the cache as the watches would (claims and volumes as API objects)."""
    for obj in objects:
        if isinstance(obj, ClaimBuilder):
            obj = obj.claim()
        elif isinstance(obj, VolumeBuilder):
            obj = obj.volume()
        elif isinstance(obj, ClassBuilder):
            obj = obj.storage_class()
        if isinstance(obj, PersistentVolumeClaim):
            storage.claims.upsert(obj)
        elif isinstance(obj, PersistentVolume):
            storage.volumes.upsert(obj)
        elif isinstance(obj, StorageClass):
            storage.classes[obj.name] = obj
            storage.changed(STORAGE_CLASS_KIND, obj.name)
        elif isinstance(obj, CSINode):
            storage.csi_nodes[obj.name] = obj
            storage.changed(CSI_NODE_KIND, obj.name)
        elif isinstance(obj, CSIDriver):
            storage.csi_drivers[obj.name] = obj
            storage.changed(CSI_DRIVER_KIND, obj.name)
        else:
            storage.capacities[obj.key] = obj
            storage.changed(CSI_STORAGE_CAPACITY_KIND, obj.key)
    return storage


def storage_with(*objects: StorageObject) -> StorageCache:
    """A cache holding the standard classes and ``objects``."""
    return add(StorageCache(), *standard_classes(), *objects)


def node(name: str, **labels: str) -> NodeBuilder:
    """A node labelled ``nodeKey=<name>`` plus ``labels``."""
    return make_node(name).label(NODE_KEY, name).labels(**labels)


def csi_node(name: str, migrated_plugins: str) -> CSINode:
    return CSINode(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": {
                "name": name,
                "resourceVersion": "1",
                "annotations": {"storage.alpha.kubernetes.io/migrated-plugins": migrated_plugins},
            },
            "spec": {"drivers": []},
        }
    )


class FakeStorageWriter:
    """Full updates against the cache's API side, each recorded as written."""

    def __init__(
        self,
        storage: StorageCache,
        *,
        deliver: bool = True,
        failures: Mapping[str, ApiError] | None = None,
    ) -> None:
        self.storage = storage
        self.deliver = deliver
        """Deliver each write to the cache at once (the watch); otherwise they are ``held``."""
        self.failures = dict(failures or {})
        """Errors to raise for writes of the objects named here (the cache is left alone)."""
        self.volumes: list[dict[str, Any]] = []
        self.claims: list[dict[str, Any]] = []
        self.held: list[PersistentVolume | PersistentVolumeClaim] = []

    def _accept(self, raw: Mapping[str, Any], current: Any, kind: str) -> dict[str, Any]:
        name = raw["metadata"]["name"]
        if name in self.failures:
            raise self.failures[name]
        if current is None:
            raise NotFoundError(f'{kind} "{name}" not found')
        if raw["metadata"].get("resourceVersion") != current.resource_version:
            raise ConflictError(
                f'Operation cannot be fulfilled on {kind} "{name}": the object has been '
                "modified; please apply your changes to the latest version and try again"
            )
        stored = copy.deepcopy(dict(raw))
        stored["metadata"] = {**stored["metadata"], "resourceVersion": next_version()}
        return stored

    async def update_volume(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        current = self.storage.volumes.get_api_object(raw["metadata"]["name"])
        stored = self._accept(raw, current, "persistentvolumes")
        self.volumes.append(copy.deepcopy(stored))
        self._publish(PersistentVolume(stored))
        return stored

    async def update_claim(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        metadata = raw["metadata"]
        current = self.storage.claims.get_api_object(f"{metadata['namespace']}/{metadata['name']}")
        stored = self._accept(raw, current, "persistentvolumeclaims")
        self.claims.append(copy.deepcopy(stored))
        self._publish(PersistentVolumeClaim(stored))
        return stored

    def _publish(self, obj: PersistentVolume | PersistentVolumeClaim) -> None:
        if self.deliver:
            deliver(self.storage, obj)
        else:
            self.held.append(obj)

    def release(self) -> None:
        """Deliver the held writes, in order."""
        for obj in self.held:
            deliver(self.storage, obj)
        self.held.clear()


def deliver(storage: StorageCache, obj: PersistentVolume | PersistentVolumeClaim) -> None:
    """A watch event for ``obj``."""
    if isinstance(obj, PersistentVolume):
        storage.volumes.upsert(obj)
    else:
        storage.claims.upsert(obj)


def updated(
    obj: PersistentVolume | PersistentVolumeClaim, change: Callable[[dict[str, Any]], None]
) -> Any:
    """A newer version of ``obj`` (as another controller would write it) with ``change`` made."""
    raw = copy.deepcopy(dict(obj.raw))
    change(raw)
    raw["metadata"] = {**raw["metadata"], "resourceVersion": next_version()}
    return type(obj)(raw)


def handle_with(
    storage: StorageCache,
    nodes: Iterable[NodeBuilder | NodeInfo] = (),
    pods: Iterable[Pod] = (),
    *,
    clock: FakeClock | None = None,
    writer: FakeStorageWriter | None = None,
) -> Handle:
    infos = [item if isinstance(item, NodeInfo) else node_info(item) for item in nodes]
    clock = clock or FakeClock(1000.0)
    by_key = {pod.key: pod for pod in pods}
    return Handle(
        snapshot=Snapshot.from_node_infos(infos),
        now=clock.now,
        sleep=clock.sleep,
        storage=storage,
        storage_writer=writer,
        get_pod=by_key.get,
    )


def plugin_on(handle: Handle, args: Mapping[str, Any] | None = None) -> VolumeBinding:
    return volume_binding.new(args, handle)


def filter_all(
    plugin: VolumeBinding, state: CycleState, pod: Pod, handle: Handle
) -> dict[str, Status]:
    """Filter every node of the handle's snapshot."""
    return {info.name: plugin.filter(state, pod, info) for info in handle.snapshot.node_info_list}


def chosen(state: CycleState, node_name: str) -> tuple[list[str], list[str]]:
    """The node's decisions: (``claim->volume`` of static bindings, claims to provision)."""
    volumes = state.read(STATE_KEY).pod_volumes_by_node[node_name]
    return (
        [f"{b.claim.name}->{b.volume.name}" for b in volumes.static_bindings],
        [p.claim.name for p in volumes.dynamic_provisions],
    )
