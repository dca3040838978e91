"""Read-only views of the storage objects the volume plugins read.

PersistentVolumeClaims, PersistentVolumes, StorageClasses, CSINodes, CSIDrivers,
CSIStorageCapacities and VolumeAttachments arrive as raw dicts like every other watched object.
Each view parses what the volume plugins read once, in its constructor, so a malformed object
fails up front with an :class:`InvalidObjectError` naming the field, and plugins read plain
attributes. ``raw`` is kept, never modified: the binding step writes changed copies of it.

Two rules from the API's helpers are easy to get wrong and live here:
- a claim's or a volume's class is the legacy ``volume.beta.kubernetes.io/storage-class``
  annotation when present, otherwise ``spec.storageClassName`` (``""`` when unset);
- a claim is *bound* only when ``spec.volumeName`` is set and the PV controller has marked it
  with ``pv.kubernetes.io/bind-completed``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.quantity import whole_value
from kopf_scheduler.model.selectors import (
    IN,
    LabelSelector,
    NodeSelector,
    Requirement,
    parse_string_map,
)
from kopf_scheduler.model.timeutil import parse_timestamp

BETA_STORAGE_CLASS_ANNOTATION = "volume.beta.kubernetes.io/storage-class"
BIND_COMPLETED_ANNOTATION = "pv.kubernetes.io/bind-completed"
BOUND_BY_CONTROLLER_ANNOTATION = "pv.kubernetes.io/bound-by-controller"
SELECTED_NODE_ANNOTATION = "volume.kubernetes.io/selected-node"
MIGRATED_PLUGINS_ANNOTATION = "storage.alpha.kubernetes.io/migrated-plugins"
MULTI_ZONE_DELIMITER = "__"
"""Separates the zones of a volume's zone label (``a__b``: zone a or zone b)."""

READ_WRITE_ONCE = "ReadWriteOnce"
READ_ONLY_MANY = "ReadOnlyMany"
READ_WRITE_MANY = "ReadWriteMany"
READ_WRITE_ONCE_POD = "ReadWriteOncePod"

VOLUME_MODE_FILESYSTEM = "Filesystem"
VOLUME_MODE_BLOCK = "Block"

BINDING_IMMEDIATE = "Immediate"
BINDING_WAIT_FOR_FIRST_CONSUMER = "WaitForFirstConsumer"

CLAIM_PENDING = "Pending"
CLAIM_BOUND = "Bound"
CLAIM_LOST = "Lost"

VOLUME_AVAILABLE = "Available"
VOLUME_BOUND = "Bound"
VOLUME_RELEASED = "Released"
VOLUME_FAILED = "Failed"

NO_PROVISIONER = "kubernetes.io/no-provisioner"

STORAGE = "storage"

IN_TREE_VOLUME_SOURCES = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "rbd",
    "iscsi",
    "azureDisk",
    "cinder",
    "vsphereVolume",
    "portworxVolume",
)
"""In-tree volume sources a PV or a pod's volume may carry (the ones the plugins tell apart)."""


def _mapping(value: Any, field: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidObjectError(field, "must be an object")
    return value


def _string(value: Any, field: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InvalidObjectError(field, f"must be a string, got {value!r}")
    return value


def _string_list(value: Any, field: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise InvalidObjectError(field, "must be a list of strings")
    return tuple(value)


def _class_name(annotations: Mapping[str, str], spec: Mapping[str, Any]) -> str:
    """The legacy class annotation when present (even empty), else ``spec.storageClassName``."""
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return annotations[BETA_STORAGE_CLASS_ANNOTATION]
    return _string(spec.get("storageClassName"), "spec.storageClassName")


def _storage_bytes(resources: Mapping[str, Any], field: str) -> int:
    if STORAGE not in resources:
        return 0
    return whole_value(resources[STORAGE], f"{field}.{STORAGE}")


class _Meta:
    """The metadata every storage view reads."""

    __slots__ = (
        "annotations",
        "deletion_timestamp",
        "key",
        "labels",
        "name",
        "namespace",
        "raw",
        "resource_version",
        "uid",
    )

    def __init__(self, raw: Mapping[str, Any], *, namespaced: bool) -> None:
        if not isinstance(raw, Mapping):
            raise InvalidObjectError("", f"must be an object, got {raw!r}")
        self.raw = raw
        metadata = _mapping(raw.get("metadata"), "metadata")
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise InvalidObjectError("metadata.name", "must be a non-empty string")
        self.name: str = name
        self.namespace: str = (metadata.get("namespace") or "default") if namespaced else ""
        self.key: str = f"{self.namespace}/{name}" if namespaced else name
        self.uid: str = _string(metadata.get("uid"), "metadata.uid")
        self.resource_version: str = _string(
            metadata.get("resourceVersion"), "metadata.resourceVersion"
        )
        self.labels: dict[str, str] = parse_string_map(metadata.get("labels"), "metadata.labels")
        self.annotations: dict[str, str] = parse_string_map(
            metadata.get("annotations"), "metadata.annotations"
        )
        self.deletion_timestamp = parse_timestamp(
            metadata.get("deletionTimestamp"), "metadata.deletionTimestamp"
        )


def resource_version_newer(new: str, old: str) -> bool:
    """Whether ``new`` is a later resourceVersion than ``old`` (etcd's are integers).

    The scheduler compares versions only to keep an assumed object until the API server has
    caught up with it, as upstream's assume cache does; a version that is not an integer is
    treated as newer, so a foreign API server can never freeze an assumption.
    """
    try:
        return int(new) > int(old)
    except ValueError:
        return new != old


@dataclass(slots=True, eq=False)
class ClaimRef:
    namespace: str
    name: str
    uid: str

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def __repr__(self) -> str:
        return f"ClaimRef({self.key}, uid={self.uid!r})"


class PersistentVolumeClaim(_Meta):
    __slots__ = (
        "access_modes",
        "controller_uid",
        "phase",
        "request",
        "selector",
        "storage_class_name",
        "volume_mode",
        "volume_name",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw, namespaced=True)
        spec = _mapping(raw.get("spec"), "spec")
        status = _mapping(raw.get("status"), "status")
        self.volume_name: str = _string(spec.get("volumeName"), "spec.volumeName")
        self.storage_class_name: str = _class_name(self.annotations, spec)
        self.access_modes = _string_list(spec.get("accessModes"), "spec.accessModes")
        resources = _mapping(spec.get("resources"), "spec.resources")
        self.request: int = _storage_bytes(
            _mapping(resources.get("requests"), "spec.resources.requests"),
            "spec.resources.requests",
        )
        self.selector: LabelSelector | None = (
            LabelSelector.parse(spec["selector"], "spec.selector")
            if spec.get("selector") is not None
            else None
        )
        self.volume_mode: str = (
            _string(spec.get("volumeMode"), "spec.volumeMode") or VOLUME_MODE_FILESYSTEM
        )
        self.phase: str = _string(status.get("phase"), "status.phase") or CLAIM_PENDING
        self.controller_uid: str | None = _controller_uid(raw)
        """UID of the owner reference marked ``controller`` (``None`` without one): the pod a
        generic ephemeral volume's claim was created for."""

    @property
    def is_bound(self) -> bool:
        """Bound by the PV controller: ``volumeName`` set and the bind marked completed."""
        return bool(self.volume_name) and BIND_COMPLETED_ANNOTATION in self.annotations

    @property
    def selected_node(self) -> str:
        return self.annotations.get(SELECTED_NODE_ANNOTATION, "")

    def __repr__(self) -> str:
        return f"PersistentVolumeClaim({self.key}, volume={self.volume_name!r})"


def _controller_uid(raw: Mapping[str, Any]) -> str | None:
    """The UID of the first owner reference with ``controller: true``, as the API's helpers
    find an object's controller."""
    metadata = _mapping(raw.get("metadata"), "metadata")
    owners = metadata.get("ownerReferences") or []
    if not isinstance(owners, list):
        raise InvalidObjectError("metadata.ownerReferences", "must be a list")
    for index, owner in enumerate(owners):
        reference = _mapping(owner, f"metadata.ownerReferences[{index}]")
        if reference.get("controller") is True:
            return _string(reference.get("uid"), f"metadata.ownerReferences[{index}].uid")
    return None


@dataclass(slots=True, eq=False)
class CSISource:
    driver: str
    volume_handle: str
    read_only: bool


class PersistentVolume(_Meta):
    __slots__ = (
        "access_modes",
        "capacity",
        "claim_ref",
        "csi",
        "in_tree_source",
        "node_affinity",
        "phase",
        "storage_class_name",
        "volume_mode",
    )

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw, namespaced=False)
        spec = _mapping(raw.get("spec"), "spec")
        status = _mapping(raw.get("status"), "status")
        self.storage_class_name: str = _class_name(self.annotations, spec)
        self.access_modes = _string_list(spec.get("accessModes"), "spec.accessModes")
        self.capacity: int = _storage_bytes(
            _mapping(spec.get("capacity"), "spec.capacity"), "spec.capacity"
        )
        self.volume_mode: str = (
            _string(spec.get("volumeMode"), "spec.volumeMode") or VOLUME_MODE_FILESYSTEM
        )
        claim_ref = spec.get("claimRef")
        self.claim_ref: ClaimRef | None = None
        if claim_ref is not None:
            ref = _mapping(claim_ref, "spec.claimRef")
            self.claim_ref = ClaimRef(
                _string(ref.get("namespace"), "spec.claimRef.namespace"),
                _string(ref.get("name"), "spec.claimRef.name"),
                _string(ref.get("uid"), "spec.claimRef.uid"),
            )
        affinity = _mapping(spec.get("nodeAffinity"), "spec.nodeAffinity")
        self.node_affinity: NodeSelector | None = (
            NodeSelector.parse(affinity["required"], "spec.nodeAffinity.required")
            if affinity.get("required") is not None
            else None
        )
        csi = spec.get("csi")
        self.csi: CSISource | None = None
        if csi is not None:
            source = _mapping(csi, "spec.csi")
            self.csi = CSISource(
                _string(source.get("driver"), "spec.csi.driver"),
                _string(source.get("volumeHandle"), "spec.csi.volumeHandle"),
                bool(source.get("readOnly")),
            )
        self.in_tree_source: tuple[str, Mapping[str, Any]] | None = None
        for source_name in IN_TREE_VOLUME_SOURCES:
            if spec.get(source_name) is not None:
                self.in_tree_source = (
                    source_name,
                    _mapping(spec[source_name], f"spec.{source_name}"),
                )
                break
        self.phase: str = _string(status.get("phase"), "status.phase")

    def node_affinity_matches(self, node_name: str, labels: Mapping[str, str]) -> bool:
        """Whether a node satisfies the PV's required node affinity (none: every node)."""
        return self.node_affinity is None or self.node_affinity.matches(node_name, labels)

    def __repr__(self) -> str:
        return f"PersistentVolume({self.name}, claim={self.claim_ref!r})"


class StorageClass(_Meta):
    __slots__ = ("allowed_topologies", "provisioner", "volume_binding_mode")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw, namespaced=False)
        self.provisioner: str = _string(raw.get("provisioner"), "provisioner")
        self.volume_binding_mode: str = (
            _string(raw.get("volumeBindingMode"), "volumeBindingMode") or BINDING_IMMEDIATE
        )
        topologies = raw.get("allowedTopologies") or []
        if not isinstance(topologies, list):
            raise InvalidObjectError("allowedTopologies", "must be a list")
        self.allowed_topologies: tuple[tuple[Requirement, ...], ...] = tuple(
            _topology_term(term, f"allowedTopologies[{index}]")
            for index, term in enumerate(topologies)
        )
        """``TopologySelectorTerm``s, ORed; each is its requirements (key In values), ANDed."""

    @property
    def waits_for_first_consumer(self) -> bool:
        return self.volume_binding_mode == BINDING_WAIT_FOR_FIRST_CONSUMER

    def allows_topology(self, labels: Mapping[str, str]) -> bool:
        """Whether a node's labels satisfy ``allowedTopologies`` (none listed: every node).

        A term without expressions selects no node, as in the API's topology term matching.
        """
        if not self.allowed_topologies:
            return True
        return any(
            term and all(requirement.matches(labels) for requirement in term)
            for term in self.allowed_topologies
        )


def _topology_term(raw: Any, field: str) -> tuple[Requirement, ...]:
    """A ``TopologySelectorTerm``: every key In its values."""
    term = _mapping(raw, field)
    expressions = term.get("matchLabelExpressions") or []
    if not isinstance(expressions, list):
        raise InvalidObjectError(f"{field}.matchLabelExpressions", "must be a list")
    requirements: list[Requirement] = []
    for index, expression in enumerate(expressions):
        where = f"{field}.matchLabelExpressions[{index}]"
        item = _mapping(expression, where)
        key = _string(item.get("key"), f"{where}.key")
        values = _string_list(item.get("values"), f"{where}.values")
        requirements.append(Requirement(key, IN, frozenset(values)))
    return tuple(requirements)


class CSINodeDriver:
    __slots__ = ("allocatable_count", "name", "node_id", "topology_keys")

    def __init__(
        self, name: str, node_id: str, topology_keys: tuple[str, ...], count: int | None
    ) -> None:
        self.name = name
        self.node_id = node_id
        self.topology_keys = topology_keys
        self.allocatable_count = count
        """``spec.drivers[].allocatable.count``; ``None`` when the driver publishes no limit."""


class CSINode(_Meta):
    __slots__ = ("drivers", "migrated_plugins")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw, namespaced=False)
        spec = _mapping(raw.get("spec"), "spec")
        drivers = spec.get("drivers") or []
        if not isinstance(drivers, list):
            raise InvalidObjectError("spec.drivers", "must be a list")
        self.drivers: dict[str, CSINodeDriver] = {}
        for index, driver_raw in enumerate(drivers):
            where = f"spec.drivers[{index}]"
            driver = _mapping(driver_raw, where)
            allocatable = _mapping(driver.get("allocatable"), f"{where}.allocatable")
            count = allocatable.get("count")
            if count is not None and (not isinstance(count, int) or isinstance(count, bool)):
                raise InvalidObjectError(f"{where}.allocatable.count", "must be an integer")
            name = _string(driver.get("name"), f"{where}.name")
            self.drivers[name] = CSINodeDriver(
                name,
                _string(driver.get("nodeID"), f"{where}.nodeID"),
                _string_list(driver.get("topologyKeys"), f"{where}.topologyKeys"),
                count,
            )
        migrated = self.annotations.get(MIGRATED_PLUGINS_ANNOTATION, "")
        self.migrated_plugins: frozenset[str] = frozenset(
            entry for entry in migrated.split(",") if entry
        )
        """The in-tree plugins the node serves through CSI drivers: the annotation's
        comma-separated entries exactly as written (the scheduler does not trim them, so
        ``"a, b"`` lists ``" b"``, not ``"b"``)."""


class CSIDriver(_Meta):
    __slots__ = ("attach_required", "storage_capacity")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw, namespaced=False)
        spec = _mapping(raw.get("spec"), "spec")
        attach = spec.get("attachRequired")
        self.attach_required: bool = True if attach is None else bool(attach)
        self.storage_capacity: bool = bool(spec.get("storageCapacity"))


class CSIStorageCapacity(_Meta):
    __slots__ = ("capacity", "maximum_volume_size", "node_topology", "storage_class_name")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw, namespaced=True)
        self.storage_class_name: str = _string(raw.get("storageClassName"), "storageClassName")
        self.node_topology: LabelSelector | None = (
            LabelSelector.parse(raw["nodeTopology"], "nodeTopology")
            if raw.get("nodeTopology") is not None
            else None
        )
        self.capacity: int | None = (
            whole_value(raw["capacity"], "capacity") if raw.get("capacity") is not None else None
        )
        self.maximum_volume_size: int | None = (
            whole_value(raw["maximumVolumeSize"], "maximumVolumeSize")
            if raw.get("maximumVolumeSize") is not None
            else None
        )


class VolumeAttachment(_Meta):
    __slots__ = ("attacher", "node_name", "persistent_volume_name")

    def __init__(self, raw: Mapping[str, Any]) -> None:
        super().__init__(raw, namespaced=False)
        spec = _mapping(raw.get("spec"), "spec")
        self.attacher: str = _string(spec.get("attacher"), "spec.attacher")
        self.node_name: str = _string(spec.get("nodeName"), "spec.nodeName")
        source = _mapping(spec.get("source"), "spec.source")
        self.persistent_volume_name: str = _string(
            source.get("persistentVolumeName"), "spec.source.persistentVolumeName"
        )
