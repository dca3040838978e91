"""Which cluster events a pod update amounts to (upstream ``PodSchedulingPropertiesChange``).

Queueing hints are registered for specific kinds of pod change (labels, a request scaled down,
scheduling gates removed, tolerations added), so an update is translated into those events
before the queue asks the hints. An update that is none of them becomes the generic update
event, which only plugins registered for any pod update see. The resource is ``AssignedPod``
when the new object is bound, ``UnschedulablePod`` (upstream's label) otherwise.
"""

from __future__ import annotations

from kopf_scheduler.framework.events import (
    UNSCHEDULED_POD_UPDATE,
    ActionType,
    ClusterEvent,
    EventResource,
)
from kopf_scheduler.model.pod import Pod

ASSIGNED_POD_UPDATE = ClusterEvent(
    EventResource.ASSIGNED_POD, ActionType.UPDATE_GENERIC, "AssignedPodUpdate"
)

_ACTION_LABELS = {
    ActionType.UPDATE_POD_LABEL: "UpdatePodLabel",
    ActionType.UPDATE_POD_SCALE_DOWN: "UpdatePodScaleDown",
    ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED: "UpdatePodSchedulingGatesEliminated",
    ActionType.UPDATE_POD_TOLERATIONS: "UpdatePodToleration",
    ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM: "UpdatePodGeneratedResourceClaim",
}


def _event(resource: EventResource, action: ActionType) -> ClusterEvent:
    return ClusterEvent(resource, action, f"{resource.value}{_ACTION_LABELS[action]}")


def _scaled_down(new: Pod, old: Pod) -> bool:
    old_requests = old.requests
    new_requests = new.requests
    return any(new_requests.get(name) < old_requests.get(name) for name in old_requests.names())


def _claim_statuses(pod: Pod) -> object:
    return (pod.raw.get("status") or {}).get("resourceClaimStatuses") or []


def pod_update_events(old: Pod, new: Pod) -> list[ClusterEvent]:
    """The events an update from ``old`` to ``new`` raises, in upstream's order."""
    resource = EventResource.ASSIGNED_POD if new.node_name else EventResource.UNSCHEDULED_POD
    actions: list[ActionType] = []
    if new.labels != old.labels:
        actions.append(ActionType.UPDATE_POD_LABEL)
    if _scaled_down(new, old):
        actions.append(ActionType.UPDATE_POD_SCALE_DOWN)
    if not new.scheduling_gates and old.scheduling_gates:
        actions.append(ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    if len(new.tolerations) != len(old.tolerations):
        actions.append(ActionType.UPDATE_POD_TOLERATIONS)
    if _claim_statuses(new) != _claim_statuses(old):
        actions.append(ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM)
    if actions:
        return [_event(resource, action) for action in actions]
    if resource is EventResource.ASSIGNED_POD:
        return [ASSIGNED_POD_UPDATE]
    return [UNSCHEDULED_POD_UPDATE]
