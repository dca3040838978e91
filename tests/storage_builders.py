"""Fluent builders for raw storage objects and their model views, for tests.

make_claim("data").storage_class("local").size("5Gi").bound_to("pv-1").claim()
make_volume("pv-1").storage_class("local").size("10Gi").on_node("n1").volume()
make_class("local").wait_for_first_consumer().storage_class()
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from kopf_scheduler.model.storage import (
    BIND_COMPLETED_ANNOTATION,
    MIGRATED_PLUGINS_ANNOTATION,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
    VolumeAttachment,
)

_versions = itertools.count(100)


def next_version() -> str:
    """A resourceVersion newer than every one handed out before, by the builders or by a write."""
    return str(next(_versions))


class ClaimBuilder:
    def __init__(self, name: str, namespace: str = "default") -> None:
        self.raw: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "uid": f"pvc-uid-{namespace}-{name}",
                "resourceVersion": next_version(),
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
            "status": {"phase": "Pending"},
        }

    @property
    def spec(self) -> dict[str, Any]:
        return self.raw["spec"]  # type: ignore[no-any-return]

    def storage_class(self, name: str) -> ClaimBuilder:
        self.spec["storageClassName"] = name
        return self

    def size(self, quantity: str) -> ClaimBuilder:
        self.spec["resources"]["requests"]["storage"] = quantity
        return self

    def access_modes(self, *modes: str) -> ClaimBuilder:
        self.spec["accessModes"] = list(modes)
        return self

    def block(self) -> ClaimBuilder:
        self.spec["volumeMode"] = "Block"
        return self

    def selector(self, **match_labels: str) -> ClaimBuilder:
        self.spec["selector"] = {"matchLabels": match_labels}
        return self

    def annotate(self, key: str, value: str) -> ClaimBuilder:
        self.raw["metadata"].setdefault("annotations", {})[key] = value
        return self

    def volume_name(self, name: str) -> ClaimBuilder:
        """``spec.volumeName`` without the bind-completed mark (a pre-bound claim)."""
        self.spec["volumeName"] = name
        return self

    def bound_to(self, volume: str) -> ClaimBuilder:
        """Bound by the PV controller: volumeName, bind-completed, phase Bound."""
        self.volume_name(volume)
        self.annotate(BIND_COMPLETED_ANNOTATION, "yes")
        return self.phase("Bound")

    def phase(self, phase: str) -> ClaimBuilder:
        self.raw["status"]["phase"] = phase
        return self

    def terminating(self, timestamp: str = "2026-01-01T00:00:00Z") -> ClaimBuilder:
        self.raw["metadata"]["deletionTimestamp"] = timestamp
        return self

    def owned_by(self, kind: str, name: str, uid: str) -> ClaimBuilder:
        self.raw["metadata"]["ownerReferences"] = [
            {"apiVersion": "v1", "kind": kind, "name": name, "uid": uid, "controller": True}
        ]
        return self

    def version(self, resource_version: str) -> ClaimBuilder:
        self.raw["metadata"]["resourceVersion"] = resource_version
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.raw)

    def claim(self) -> PersistentVolumeClaim:
        return PersistentVolumeClaim(self.obj())


class VolumeBuilder:
    def __init__(self, name: str) -> None:
        self.raw: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {
                "name": name,
                "uid": f"pv-uid-{name}",
                "resourceVersion": next_version(),
            },
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "capacity": {"storage": "1Gi"},
                "persistentVolumeReclaimPolicy": "Retain",
            },
            "status": {"phase": "Available"},
        }

    @property
    def spec(self) -> dict[str, Any]:
        return self.raw["spec"]  # type: ignore[no-any-return]

    def storage_class(self, name: str) -> VolumeBuilder:
        self.spec["storageClassName"] = name
        return self

    def size(self, quantity: str) -> VolumeBuilder:
        self.spec["capacity"]["storage"] = quantity
        return self

    def access_modes(self, *modes: str) -> VolumeBuilder:
        self.spec["accessModes"] = list(modes)
        return self

    def block(self) -> VolumeBuilder:
        self.spec["volumeMode"] = "Block"
        return self

    def label(self, key: str, value: str) -> VolumeBuilder:
        self.raw["metadata"].setdefault("labels", {})[key] = value
        return self

    def zone(self, zone: str) -> VolumeBuilder:
        return self.label("topology.kubernetes.io/zone", zone)

    def node_affinity(self, key: str, *values: str) -> VolumeBuilder:
        """Required node affinity ``key In values`` (one term)."""
        self.spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}
                ]
            }
        }
        return self

    def on_node(self, node_name: str) -> VolumeBuilder:
        """A local volume: node affinity to ``kubernetes.io/hostname``."""
        self.spec["local"] = {"path": f"/mnt/{self.raw['metadata']['name']}"}
        return self.node_affinity("kubernetes.io/hostname", node_name)

    def csi(self, driver: str, handle: str = "") -> VolumeBuilder:
        self.spec["csi"] = {
            "driver": driver,
            "volumeHandle": handle or self.raw["metadata"]["name"],
        }
        return self

    def source(self, kind: str, **fields: Any) -> VolumeBuilder:
        """An in-tree source, e.g. ``.source("gcePersistentDisk", pdName="d")``."""
        self.spec[kind] = fields
        return self

    def claimed_by(self, namespace: str, name: str, uid: str = "") -> VolumeBuilder:
        ref: dict[str, Any] = {
            "kind": "PersistentVolumeClaim",
            "namespace": namespace,
            "name": name,
        }
        if uid:
            ref["uid"] = uid
        self.spec["claimRef"] = ref
        return self

    def phase(self, phase: str) -> VolumeBuilder:
        self.raw["status"]["phase"] = phase
        return self

    def version(self, resource_version: str) -> VolumeBuilder:
        self.raw["metadata"]["resourceVersion"] = resource_version
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.raw)

    def volume(self) -> PersistentVolume:
        return PersistentVolume(self.obj())


class ClassBuilder:
    def __init__(self, name: str) -> None:
        self.raw: dict[str, Any] = {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name, "resourceVersion": next_version()},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "Immediate",
        }

    def provisioner(self, name: str) -> ClassBuilder:
        self.raw["provisioner"] = name
        return self

    def wait_for_first_consumer(self) -> ClassBuilder:
        self.raw["volumeBindingMode"] = "WaitForFirstConsumer"
        return self

    def allowed_topology(self, key: str, *values: str) -> ClassBuilder:
        """One more allowed topology term ``key In values``."""
        term = {"matchLabelExpressions": [{"key": key, "values": list(values)}]}
        self.raw.setdefault("allowedTopologies", []).append(term)
        return self

    def obj(self) -> dict[str, Any]:
        return copy.deepcopy(self.raw)

    def storage_class(self) -> StorageClass:
        return StorageClass(self.obj())


def make_claim(name: str, namespace: str = "default") -> ClaimBuilder:
    return ClaimBuilder(name, namespace)


def make_volume(name: str) -> VolumeBuilder:
    return VolumeBuilder(name)


def make_class(name: str) -> ClassBuilder:
    return ClassBuilder(name)


def make_csi_node(
    name: str, drivers: dict[str, int | None] | None = None, *, migrated: str | None = None
) -> CSINode:
    """A CSINode; ``drivers`` maps driver name to ``allocatable.count`` (None: no limit), and
    ``migrated`` is its migrated-plugins annotation (None: not annotated)."""
    entries: list[dict[str, Any]] = []
    for driver, count in (drivers or {}).items():
        entry: dict[str, Any] = {"name": driver, "nodeID": name, "topologyKeys": []}
        if count is not None:
            entry["allocatable"] = {"count": count}
        entries.append(entry)
    metadata: dict[str, Any] = {"name": name, "resourceVersion": next_version()}
    if migrated is not None:
        metadata["annotations"] = {MIGRATED_PLUGINS_ANNOTATION: migrated}
    return CSINode(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSINode",
            "metadata": metadata,
            "spec": {"drivers": entries},
        }
    )


def make_csi_driver(name: str, storage_capacity: bool = False) -> CSIDriver:
    return CSIDriver(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "CSIDriver",
            "metadata": {"name": name, "resourceVersion": next_version()},
            "spec": {"storageCapacity": storage_capacity},
        }
    )


def make_capacity(
    name: str,
    storage_class: str,
    capacity: str | None,
    topology: dict[str, str] | None = None,
    maximum_volume_size: str | None = None,
    namespace: str = "kube-system",
) -> CSIStorageCapacity:
    """A CSIStorageCapacity; ``topology`` is the node topology's matchLabels."""
    raw: dict[str, Any] = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": namespace, "resourceVersion": next_version()},
        "storageClassName": storage_class,
    }
    if topology is not None:
        raw["nodeTopology"] = {"matchLabels": topology}
    if capacity is not None:
        raw["capacity"] = capacity
    if maximum_volume_size is not None:
        raw["maximumVolumeSize"] = maximum_volume_size
    return CSIStorageCapacity(raw)


def make_attachment(name: str, attacher: str, node_name: str, volume: str) -> VolumeAttachment:
    return VolumeAttachment(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "VolumeAttachment",
            "metadata": {"name": name, "resourceVersion": next_version()},
            "spec": {
                "attacher": attacher,
                "nodeName": node_name,
                "source": {"persistentVolumeName": volume},
            },
        }
    )
