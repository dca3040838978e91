"""Nodes: the cache's view of them, and the cluster events their changes amount to.

A node added or changed goes to the cache and is offered, as the node events it amounts to, to
the pods its absence or its old state rejected; a deleted or cordoned node also voids the
nominations to it. A node too malformed to parse is logged and left out of the cache, as if it
did not exist.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import structlog

from kopf_scheduler.framework.events import ActionType, ClusterEvent, EventResource
from kopf_scheduler.model.errors import InvalidObjectError
from kopf_scheduler.model.node import Node
from kopf_scheduler.scheduler.loop import Scheduler

logger = structlog.get_logger("kopf_scheduler.informer")

_NODE_UPDATE_LABELS = {
    ActionType.UPDATE_NODE_ALLOCATABLE: "NodeUpdateNodeAllocatable",
    ActionType.UPDATE_NODE_LABEL: "NodeUpdateNodeLabel",
    ActionType.UPDATE_NODE_TAINT: "NodeUpdateNodeTaint",
    ActionType.UPDATE_NODE_CONDITION: "NodeUpdateNodeCondition",
    ActionType.UPDATE_NODE_ANNOTATION: "NodeUpdateNodeAnnotation",
}
"""kube-scheduler's labels for these events (resource, then action) in
``scheduler_queue_incoming_pods_total`` and ``scheduler_event_handling_duration_seconds``."""


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


class NodeEvents:
    def __init__(self, scheduler: Scheduler) -> None:
        self._scheduler = scheduler

    def applied(self, raw: Mapping[str, Any]) -> None:
        metadata = raw.get("metadata") or {}
        name = metadata.get("name", "")
        old = self._scheduler.node(name)
        version = metadata.get("resourceVersion")
        if old is not None and version and old.resource_version == version:
            return  # the same object again (a relist): nothing changed
        try:
            node = Node(raw)
        except InvalidObjectError as error:
            logger.error("malformed_node_ignored", node=name, reason=str(error))
            self._scheduler.on_node_unreadable(name)
            return
        if old is None:
            self._scheduler.on_node_added(node)
            return
        self._scheduler.on_node_updated(old, node, node_update_events(old, node))

    def deleted(self, raw: Mapping[str, Any]) -> None:
        self._scheduler.on_node_deleted((raw.get("metadata") or {}).get("name", ""))
