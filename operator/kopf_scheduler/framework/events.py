"""Cluster events and queueing hints: when a pod rejected by a plugin is worth retrying.

Each plugin registers the events that can make a pod it rejected schedulable again, optionally
with a hint function that looks at the object change and answers Queue or QueueSkip. The queue
consults these registrations when it decides whether an unschedulable pod moves back.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum, IntFlag
from typing import Any

from kopf_scheduler.model.pod import Pod


class EventResource(Enum):
    POD = "Pod"
    """Any pod: matches assigned and unscheduled pod events."""
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"
    NODE = "Node"
    POD_DISRUPTION_BUDGET = "PodDisruptionBudget"
    NAMESPACE = "Namespace"
    PERSISTENT_VOLUME = "PersistentVolume"
    PERSISTENT_VOLUME_CLAIM = "PersistentVolumeClaim"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    CSI_DRIVER = "CSIDriver"
    CSI_STORAGE_CAPACITY = "CSIStorageCapacity"
    VOLUME_ATTACHMENT = "VolumeAttachment"
    POD_GROUP = "PodGroup"
    """scheduler-plugins' ``scheduling.x-k8s.io`` PodGroup (gang scheduling)."""
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    WILDCARD = "*"

    def matches(self, incoming: EventResource) -> bool:
        if self is EventResource.WILDCARD or self is incoming:
            return True
        return self is EventResource.POD and incoming in (
            EventResource.ASSIGNED_POD,
            EventResource.UNSCHEDULED_POD,
        )


class ActionType(IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_GENERIC = 2048
    """Any other update (for objects without finer-grained update events)."""
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 4096
    """The pod's ``status.resourceClaimStatuses`` changed (a claim made from a template)."""

    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_POD_GENERATED_RESOURCE_CLAIM
        | UPDATE_GENERIC
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True)
class ClusterEvent:
    resource: EventResource
    action: ActionType
    label: str = ""

    def matches(self, incoming: ClusterEvent) -> bool:
        """Whether this (registered) event covers an incoming one."""
        if self.is_wildcard():
            return True
        return self.resource.matches(incoming.resource) and bool(self.action & incoming.action)

    def is_wildcard(self) -> bool:
        return self.resource is EventResource.WILDCARD and self.action == ActionType.ALL

    @property
    def name(self) -> str:
        if self.label:
            return self.label
        return f"{self.resource.value}/{self.action.name or int(self.action)}"


class QueueingHint(Enum):
    QUEUE_SKIP = 0
    QUEUE = 1


HintFn = Callable[[Pod, Any, Any], QueueingHint]
"""``hint(pod, old_object, new_object)``; objects are model views (or ``None``)."""


@dataclass(frozen=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: HintFn | None = None


# Events the event handlers and the queue raise.
NODE_ADD = ClusterEvent(EventResource.NODE, ActionType.ADD, "NodeAdd")
NODE_DELETE = ClusterEvent(EventResource.NODE, ActionType.DELETE, "NodeDelete")
ASSIGNED_POD_ADD = ClusterEvent(EventResource.ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd")
ASSIGNED_POD_DELETE = ClusterEvent(
    EventResource.ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"
)
UNSCHEDULED_POD_ADD = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.ADD, "UnschedulablePodAdd"
)
UNSCHEDULED_POD_UPDATE = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.UPDATE_GENERIC, "UnschedulablePodUpdate"
)
UNSCHEDULED_POD_DELETE = ClusterEvent(
    EventResource.UNSCHEDULED_POD, ActionType.DELETE, "UnschedulablePodDelete"
)


def object_event(resource: EventResource, action: ActionType) -> ClusterEvent:
    """The event the handlers raise for an object without finer-grained updates (storage kinds):
    ``action`` is ADD, DELETE or UPDATE_GENERIC; labelled as upstream (``PersistentVolumeAdd``)."""
    verb = {ActionType.ADD: "Add", ActionType.DELETE: "Delete"}.get(action, "Update")
    return ClusterEvent(resource, action, f"{resource.value}{verb}")


WILDCARD_EVENT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "*")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "ForceActivate")
BACKOFF_COMPLETE = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "BackoffComplete")
POP_FROM_BACKOFF = ClusterEvent(EventResource.WILDCARD, ActionType.ALL, "PopFromBackoffQ")
