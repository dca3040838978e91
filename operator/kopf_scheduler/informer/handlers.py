"""Route watch events to the cache and the queue, as kube-scheduler's event handlers do.

- Assigned pods (``spec.nodeName`` set, not terminal) live in the cache; their changes are
  cluster events that may make pending pods schedulable.
- Unassigned pods whose ``schedulerName`` names one of our profiles live in the queue; others are
  only remembered (preemption and failure handling look pods up by name).
- Terminal pods (Succeeded/Failed) are treated as gone, as upstream's informer excludes them.
- A pod too malformed to parse is reported on the pod (event and condition) and kept aside
  until it is fixed or deleted; nothing else stops.
- PodGroups (gang scheduling) are kept in the store, and each change is the PodGroup add or
  update event that gives the group's pods another try; pods are indexed by the group they name.
- DeviceClasses, ResourceSlices and ResourceClaims (dynamic resource allocation) fill the DRA
  cache; a claim's change, whether the watch delivered it or the scheduler assumed or restored
  it, is the ResourceClaim add, update or delete event, as upstream's handlers sit on its assume
  cache. A malformed one is logged and left out.
- Storage objects (claims, volumes, classes, CSI objects, attachments) fill the storage cache the
  volume plugins read; each change is the kind's add, update or delete event. A malformed one is
  logged and left out of the cache, as if it did not exist.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from kopf_scheduler.cache.storage import AssumeCache, StorageCache
from kopf_scheduler.framework.events import (
    ASSIGNED_POD_DELETE,
    NODE_ADD,
    NODE_DELETE,
    ActionType,
    ClusterEvent,
    EventResource,
    object_event,
)
from kopf_scheduler.informer.store import Store
from kopf_scheduler.informer.workloads import WorkloadIndex
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pdb import PodDisruptionBudget
from kopf_scheduler.model.pod import Pod, pod_key
from kopf_scheduler.model.pod_group import PodGroup
from kopf_scheduler.model.priority_class import PriorityClass
from kopf_scheduler.model.resource_claim import ResourceClaim
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
from kopf_scheduler.queue.scheduling_queue import priority_at_most
from kopf_scheduler.scheduler.failure import invalid_pod_message
from kopf_scheduler.scheduler.loop import Scheduler

logger = structlog.get_logger("kopf_scheduler.informer")

EventHandler = Callable[[str, Mapping[str, Any]], None]
"""Takes one watch event of a kind: ``(event_type, raw object)``."""

ADDED = "ADDED"
MODIFIED = "MODIFIED"
DELETED = "DELETED"

WAITING_POD_REMOVED = "removed"
"""The rejection a pod waiting at Permit gets when it is deleted (or bound elsewhere)."""

_NODE_UPDATE_LABELS = {
    ActionType.UPDATE_NODE_ALLOCATABLE: "NodeAllocatableChange",
    ActionType.UPDATE_NODE_LABEL: "NodeLabelChange",
    ActionType.UPDATE_NODE_TAINT: "NodeTaintChange",
    ActionType.UPDATE_NODE_CONDITION: "NodeConditionChange",
    ActionType.UPDATE_NODE_ANNOTATION: "NodeAnnotationChange",
}


def node_update_events(old: Node, new: Node) -> list[ClusterEvent]:
    """The node events an update amounts to (upstream ``NodeSchedulingPropertiesChange``)."""
    actions: list[ActionType] = []
    if old.unschedulable != new.unschedulable:
        actions.append(ActionType.UPDATE_NODE_TAINT)
    if old.allocatable != new.allocatable:
        actions.append(ActionType.UPDATE_NODE_ALLOCATABLE)
    if old.labels != new.labels:
        actions.append(ActionType.UPDATE_NODE_LABEL)
    if [repr(t) for t in old.taints] != [repr(t) for t in new.taints] and (
        ActionType.UPDATE_NODE_TAINT not in actions
    ):
        actions.append(ActionType.UPDATE_NODE_TAINT)
    old_conditions = (old.raw.get("status") or {}).get("conditions")
    new_conditions = (new.raw.get("status") or {}).get("conditions")
    if _condition_statuses(old_conditions) != _condition_statuses(new_conditions):
        actions.append(ActionType.UPDATE_NODE_CONDITION)
    old_annotations = (old.raw.get("metadata") or {}).get("annotations") or {}
    new_annotations = (new.raw.get("metadata") or {}).get("annotations") or {}
    if old_annotations != new_annotations:
        actions.append(ActionType.UPDATE_NODE_ANNOTATION)
    return [
        ClusterEvent(EventResource.NODE, action, _NODE_UPDATE_LABELS[action]) for action in actions
    ]


def _condition_statuses(conditions: Any) -> dict[str, str]:
    if not isinstance(conditions, list):
        return {}
    return {c.get("type", ""): c.get("status", "") for c in conditions if isinstance(c, Mapping)}


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
    def __init__(self, objects: dict[str, Any]) -> None:
        self._objects = objects

    def known(self, key: str) -> StorageObject | None:
        found: StorageObject | None = self._objects.get(key)
        return found

    def put(self, obj: Any) -> None:
        self._objects[obj.key] = obj

    def drop(self, key: str) -> None:
        self._objects.pop(key, None)


@dataclass(frozen=True)
class _StorageKind:
    parse: Callable[[Mapping[str, Any]], StorageObject]
    resource: EventResource
    shelf: Callable[[StorageCache], _Shelf]
    namespaced: bool = False


STORAGE_KINDS: Mapping[str, _StorageKind] = {
    "PersistentVolumeClaim": _StorageKind(
        PersistentVolumeClaim,
        EventResource.PERSISTENT_VOLUME_CLAIM,
        lambda storage: _AssumedShelf(storage.claims),
        namespaced=True,
    ),
    "PersistentVolume": _StorageKind(
        PersistentVolume,
        EventResource.PERSISTENT_VOLUME,
        lambda storage: _AssumedShelf(storage.volumes),
    ),
    "StorageClass": _StorageKind(
        StorageClass, EventResource.STORAGE_CLASS, lambda storage: _DictShelf(storage.classes)
    ),
    "CSINode": _StorageKind(
        CSINode, EventResource.CSI_NODE, lambda storage: _DictShelf(storage.csi_nodes)
    ),
    "CSIDriver": _StorageKind(
        CSIDriver, EventResource.CSI_DRIVER, lambda storage: _DictShelf(storage.csi_drivers)
    ),
    "CSIStorageCapacity": _StorageKind(
        CSIStorageCapacity,
        EventResource.CSI_STORAGE_CAPACITY,
        lambda storage: _DictShelf(storage.capacities),
        namespaced=True,
    ),
    "VolumeAttachment": _StorageKind(
        VolumeAttachment,
        EventResource.VOLUME_ATTACHMENT,
        lambda storage: _DictShelf(storage.attachments),
    ),
}
"""Every storage kind the scheduler watches: its view, its cluster events, its cache.

Upstream registers a kind's add, update or delete handler only when an enabled plugin asked for
that event; here every change is raised and the queue drops events no plugin is interested in,
which comes to the same moves.
"""


def _storage_key(raw: Mapping[str, Any], namespaced: bool) -> str:
    """The cache key of a storage object, read without trusting its shape."""
    metadata = raw.get("metadata")
    if not isinstance(metadata, Mapping):
        return ""
    name = str(metadata.get("name") or "")
    return f"{metadata.get('namespace') or 'default'}/{name}" if namespaced else name


def _resource_version(raw: Mapping[str, Any]) -> str:
    metadata = raw.get("metadata")
    version = metadata.get("resourceVersion") if isinstance(metadata, Mapping) else None
    return version if isinstance(version, str) else ""


def _already_reported(raw: Mapping[str, Any], message: str) -> bool:
    for condition in (raw.get("status") or {}).get("conditions") or []:
        if (
            isinstance(condition, Mapping)
            and condition.get("type") == "PodScheduled"
            and condition.get("status") == "False"
            and condition.get("message") == message
        ):
            return True
    return False


def _is_terminal(raw: Mapping[str, Any]) -> bool:
    return (raw.get("status") or {}).get("phase") in ("Succeeded", "Failed")


class EventHandlers:
    def __init__(
        self,
        scheduler: Scheduler,
        store: Store,
        workloads: WorkloadIndex | None = None,
    ) -> None:
        self.scheduler = scheduler
        self.store = store
        self.workloads = workloads
        store.dra.subscribe(self._claim_changed)

    def route(self, kind: str) -> EventHandler:
        """The handler of a kind of :data:`~kopf_scheduler.informer.watched_kinds.WATCHED_KINDS`:
        every watcher and the listings deliver ``(event_type, raw)`` through it."""
        if kind in ("ReplicationController", "ReplicaSet", "StatefulSet"):
            return lambda event_type, raw: self.on_controller(kind, event_type, raw)
        if kind in STORAGE_KINDS:
            return lambda event_type, raw: self.on_storage(kind, event_type, raw)
        handler: EventHandler = {
            "PriorityClass": self.on_priority_class,
            "Namespace": self.on_namespace,
            "Node": self.on_node,
            "PodDisruptionBudget": self.on_pdb,
            "Service": self.on_service,
            "PodGroup": self.on_pod_group,
            "DeviceClass": self.on_device_class,
            "ResourceSlice": self.on_resource_slice,
            "ResourceClaim": self.on_resource_claim,
            "Pod": self.on_pod,
        }[kind]
        return handler

    # Nodes -------------------------------------------------------------------------------------

    def on_node(self, event_type: str, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata") or {}
        name = metadata.get("name", "")
        cache = self.scheduler.cache
        queue = self.scheduler.queue
        if event_type == DELETED:
            cache.remove_node(name)
            self.scheduler.nominations.node_gone(name, "node deleted")
            queue.move_all_to_active_or_backoff_queue(NODE_DELETE, None, None)
            return
        old = self.get_node(name)
        version = metadata.get("resourceVersion")
        if old is not None and version and old.resource_version == version:
            return  # the same object again (a relist): nothing changed
        try:
            node = Node(raw)
        except InvalidObjectError as error:
            logger.error("malformed_node_ignored", node=name, reason=str(error))
            cache.remove_node(name)
            return
        cache.add_node(node)
        if old is None:
            queue.move_all_to_active_or_backoff_queue(NODE_ADD, None, node)
            return
        if node.unschedulable and not old.unschedulable:
            self.scheduler.nominations.node_gone(name, "node marked unschedulable")
        for event in node_update_events(old, node):
            queue.move_all_to_active_or_backoff_queue(event, old, node)

    def get_node(self, name: str) -> Node | None:
        """The node as the cache last saw it (``None`` once deleted)."""
        info = self.scheduler.cache.get_node_info(name)
        return info.node if info is not None else None

    # Workloads (Services and controllers, for default topology spreading) -----------------------

    def on_service(self, event_type: str, raw: Mapping[str, Any]) -> None:
        if self.workloads is not None:
            self.workloads.on_service(event_type, raw)

    def on_controller(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
        if self.workloads is not None:
            self.workloads.on_controller(kind, event_type, raw)

    # Namespaces, PDBs, priority classes ----------------------------------------------------------

    def on_namespace(self, event_type: str, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata") or {}
        name = metadata.get("name", "")
        if event_type == DELETED:
            self.scheduler.cache.remove_namespace(name)
        else:
            labels = metadata.get("labels") or {}
            self.scheduler.cache.set_namespace(name, labels if isinstance(labels, Mapping) else {})

    def on_pdb(self, event_type: str, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata") or {}
        key = f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"
        if event_type == DELETED:
            self.store.pdbs.pop(key, None)
            return
        try:
            self.store.pdbs[key] = PodDisruptionBudget(raw)
        except InvalidObjectError as error:
            logger.error("malformed_pdb_ignored", pdb=key, reason=str(error))
            self.store.pdbs.pop(key, None)

    def on_priority_class(self, event_type: str, raw: Mapping[str, Any]) -> None:
        name = (raw.get("metadata") or {}).get("name", "")
        if event_type == DELETED:
            self.store.priority_classes.pop(name, None)
            return
        try:
            self.store.priority_classes[name] = PriorityClass(raw)
        except InvalidObjectError as error:
            logger.error("malformed_priority_class_ignored", priority_class=name, reason=str(error))

    def on_pod_group(self, event_type: str, raw: Mapping[str, Any]) -> None:
        """Keep the PodGroup store current; a group created or changed may let its pods in."""
        metadata = raw.get("metadata") or {}
        key = f"{metadata.get('namespace') or 'default'}/{metadata.get('name', '')}"
        groups = self.store.pod_groups.groups
        old = groups.get(key)
        if event_type == DELETED:
            groups.pop(key, None)
            return
        version = _resource_version(raw)
        if old is not None and version and old.resource_version == version:
            return
        try:
            group = PodGroup(raw)
        except InvalidObjectError as error:
            logger.error("malformed_pod_group_ignored", pod_group=key, reason=str(error))
            groups.pop(key, None)
            return
        groups[key] = group
        action = ActionType.ADD if old is None else ActionType.UPDATE_GENERIC
        self.scheduler.queue.move_all_to_active_or_backoff_queue(
            object_event(EventResource.POD_GROUP, action), old, group
        )

    # Dynamic resource allocation ---------------------------------------------------------------

    def on_device_class(self, event_type: str, raw: Mapping[str, Any]) -> None:
        self._on_cluster_scoped(self.store.dra.classes, EventResource.DEVICE_CLASS, event_type, raw)

    def on_resource_slice(self, event_type: str, raw: Mapping[str, Any]) -> None:
        self._on_cluster_scoped(
            self.store.dra.slices, EventResource.RESOURCE_SLICE, event_type, raw
        )

    def _on_cluster_scoped(
        self,
        objects: dict[str, Mapping[str, Any]],
        resource: EventResource,
        event_type: str,
        raw: Mapping[str, Any],
    ) -> None:
        """DeviceClasses and ResourceSlices are kept raw: the allocator reads them whole."""
        name = _storage_key(raw, namespaced=False)
        if not name:
            logger.error("malformed_object_ignored", kind=resource.value, reason="no name")
            return
        old = objects.get(name)
        queue = self.scheduler.queue
        if event_type == DELETED:
            if old is not None:
                del objects[name]
                queue.move_all_to_active_or_backoff_queue(
                    object_event(resource, ActionType.DELETE), old, None
                )
            return
        version = _resource_version(raw)
        if (
            old is not None
            and version
            and not resource_version_newer(version, _resource_version(old))
        ):
            return
        objects[name] = raw
        action = ActionType.ADD if old is None else ActionType.UPDATE_GENERIC
        queue.move_all_to_active_or_backoff_queue(object_event(resource, action), old, raw)

    def on_resource_claim(self, event_type: str, raw: Mapping[str, Any]) -> None:
        dra = self.store.dra
        key = _storage_key(raw, namespaced=True)
        if event_type == DELETED:
            dra.delete_claim(key)
            return
        try:
            claim = ResourceClaim(raw)
        except InvalidObjectError as error:
            logger.error(
                "malformed_resource_claim_ignored",
                claim=key,
                field=error.field,
                reason=error.reason,
            )
            dra.delete_claim(key)
            return
        dra.put_claim(claim)

    def _claim_changed(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        if new is None:
            action = ActionType.DELETE
        elif old is None:
            action = ActionType.ADD
        else:
            action = ActionType.UPDATE_GENERIC
        self.scheduler.queue.move_all_to_active_or_backoff_queue(
            object_event(EventResource.RESOURCE_CLAIM, action), old, new
        )

    # Storage objects -----------------------------------------------------------------------------

    def on_storage(self, kind: str, event_type: str, raw: Mapping[str, Any]) -> None:
        """Apply a watch event of a storage ``kind`` (a key of :data:`STORAGE_KINDS`).

        A version not newer than the one already known (a relist, a stale listing) changes
        nothing; a delete of an object never known (or dropped as malformed) raises nothing.
        """
        storage_kind = STORAGE_KINDS.get(kind)
        if storage_kind is None:
            raise ValueError(f"not a storage kind: {kind!r}")
        shelf = storage_kind.shelf(self.store.storage)
        key = _storage_key(raw, storage_kind.namespaced)
        old = shelf.known(key)
        queue = self.scheduler.queue
        if event_type == DELETED:
            if old is None:
                return
            shelf.drop(key)
            gone = self._parse_storage(kind, key, storage_kind, raw) or old
            event = object_event(storage_kind.resource, ActionType.DELETE)
            queue.move_all_to_active_or_backoff_queue(event, gone, None)
            return
        version = _resource_version(raw)
        if (
            old is not None
            and version
            and not resource_version_newer(version, old.resource_version)
        ):
            return
        new = self._parse_storage(kind, key, storage_kind, raw)
        if new is None:
            shelf.drop(key)
            return
        shelf.put(new)
        action = ActionType.ADD if old is None else ActionType.UPDATE_GENERIC
        queue.move_all_to_active_or_backoff_queue(
            object_event(storage_kind.resource, action), old, new
        )

    @staticmethod
    def _parse_storage(
        kind: str, key: str, storage_kind: _StorageKind, raw: Mapping[str, Any]
    ) -> StorageObject | None:
        try:
            return storage_kind.parse(raw)
        except InvalidObjectError as error:
            logger.error(
                "malformed_storage_object_ignored",
                kind=kind,
                key=key,
                field=error.field,
                reason=error.reason,
            )
            return None

    # Pods ----------------------------------------------------------------------------------------

    def resolve_priority(self, raw: Mapping[str, Any]) -> Mapping[str, Any]:
        """Fill ``spec.priority`` from the PriorityClass when admission did not (rare)."""
        spec = raw.get("spec") or {}
        if spec.get("priority") is not None:
            return raw
        class_name = spec.get("priorityClassName")
        priority_class = (
            self.store.priority_classes.get(class_name)
            if class_name
            else self.store.global_default_priority_class()
        )
        if priority_class is None:
            return raw
        resolved = copy.copy(dict(raw))
        resolved_spec = dict(spec)
        resolved_spec["priority"] = priority_class.value
        resolved_spec.setdefault("preemptionPolicy", priority_class.preemption_policy)
        resolved["spec"] = resolved_spec
        return resolved

    def _is_ours(self, raw: Mapping[str, Any]) -> str | None:
        name = (raw.get("spec") or {}).get("schedulerName") or "default-scheduler"
        return name if name in self.scheduler.profiles else None

    def on_pod(self, event_type: str, raw: Mapping[str, Any]) -> None:
        key = pod_key(raw)
        old = self.store.pods.get(key)
        if event_type == DELETED or _is_terminal(raw):
            self.store.invalid_pods.pop(key, None)
            if old is not None:
                del self.store.pods[key]
                self.store.pod_groups.pod_changed(old, None)
                self._pod_gone(old)
            return
        raw = self.resolve_priority(raw)
        try:
            pod = Pod(raw)
        except InvalidObjectError as error:
            self._invalid_pod(key, raw, old, error)
            return
        self.store.invalid_pods.pop(key, None)
        self.store.pods[key] = pod
        self.store.pod_groups.pod_changed(old, pod)
        if old is not None and old.uid != pod.uid:
            self._pod_gone(old)
            old = None
        if old is not None:
            pod.follow(old)
        if (
            old is not None
            and old.resource_version
            and old.resource_version == pod.resource_version
        ):
            return
        if pod.node_name:
            self._assigned_pod(old, pod)
        elif self._is_ours(raw) is not None:
            self._pending_pod(old, pod)
        elif old is not None and old.node_name:
            self._pod_gone(old)

    def _invalid_pod(
        self, key: str, raw: Mapping[str, Any], old: Pod | None, error: InvalidObjectError
    ) -> None:
        if old is not None:
            del self.store.pods[key]
            self.store.pod_groups.pod_changed(old, None)
            self._pod_gone(old)
        scheduler_name = self._is_ours(raw)
        node_name = (raw.get("spec") or {}).get("nodeName")
        if scheduler_name is None or node_name:
            logger.warning("malformed_pod_ignored", pod=key, reason=str(error))
            return
        self.store.invalid_pods[key] = raw
        if not _already_reported(raw, invalid_pod_message(error)):
            self.scheduler.report_invalid_pod(raw, scheduler_name, error)

    def _assigned_pod(self, old: Pod | None, pod: Pod) -> None:
        cache = self.scheduler.cache
        queue = self.scheduler.queue
        if old is not None and not old.node_name:
            # It was pending and is now bound (by us, or by someone else): to the queue, that
            # is the pending pod leaving, as if deleted.
            self._unscheduled_pod_gone(old)
            old = None
        self.scheduler.nominations.bound(pod)
        if old is None:
            cache.add_pod(pod)
            queue.assigned_pod_added(pod)
        else:
            cache.update_pod(old, pod)
            queue.assigned_pod_updated(old, pod)

    def _pending_pod(self, old: Pod | None, pod: Pod) -> None:
        queue = self.scheduler.queue
        if old is None or old.node_name:
            queue.add(pod)
            return
        if self.scheduler.cache.is_assumed(pod):
            return
        queue.update(old, pod)
        if old.nominated_node_name and old.nominated_node_name != pod.nominated_node_name:
            queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, old, None, priority_at_most(old.priority)
            )

    def _pod_gone(self, old: Pod) -> None:
        if old.node_name:
            self.scheduler.cache.remove_pod(old)
            self.scheduler.queue.assigned_pod_deleted(old)
            return
        self._unscheduled_pod_gone(old)

    def _unscheduled_pod_gone(self, old: Pod) -> None:
        """A pending pod of ours left the queue: deleted, or bound (upstream's
        ``deletePodFromSchedulingQueue``).

        A pod rejected while waiting at Permit held room in the cache: every unschedulable pod
        may retry. A pod that carried a nomination held room for the pods of equal or lower
        priority: those may retry. An assumed pod stays in the cache until its binding fails.
        """
        framework = self.scheduler.profiles.get(old.scheduler_name)
        if framework is None:
            return
        queue = self.scheduler.queue
        queue.delete(old)
        if framework.reject_waiting_pod(old.uid, WAITING_POD_REMOVED):
            queue.move_all_to_active_or_backoff_queue(ASSIGNED_POD_DELETE, old, None)
        elif old.nominated_node_name:
            queue.move_all_to_active_or_backoff_queue(
                ASSIGNED_POD_DELETE, old, None, priority_at_most(old.priority)
            )
