"""NodeUnschedulable: keep pods off cordoned nodes unless they tolerate the unschedulable taint.

The batch Filter reads the node columns' cordon flags: a pod that tolerates the taint passes
everywhere, any other is rejected on every cordoned node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.taints import NO_SCHEDULE, Taint, tolerations_tolerate
from kopf_scheduler.plugin_api import (
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    FreeColumns,
    Handle,
    NodeColumns,
    NodeInfo,
    NodeRejections,
    QueueingHint,
    Status,
    ensure_mapping,
    reject_unknown,
)

NAME = "NodeUnschedulable"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)


def _is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if not isinstance(new, Node):
        return QueueingHint.QUEUE
    if not new.unschedulable:
        return QueueingHint.QUEUE
    return QueueingHint.QUEUE_SKIP


class NodeUnschedulable:
    name: ClassVar[str] = NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        node = node_info.node
        if node is None:
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNKNOWN_CONDITION)
        if not node.unschedulable:
            return SUCCESS
        if tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT):
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNSCHEDULABLE)

    def batch_filter(self) -> NodeUnschedulable:
        return self

    def filter_nodes(
        self, state: CycleState, pod: Pod, nodes: NodeColumns, free: FreeColumns
    ) -> NodeRejections | None:
        unschedulable = nodes.mirror.unschedulable
        if not unschedulable.any():
            return None
        if tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        return NodeRejections(unschedulable.copy())

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT),
                _is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(EventResource.UNSCHEDULED_POD, ActionType.UPDATE_POD_TOLERATIONS)
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodeUnschedulable:
    reject_unknown(ensure_mapping(args), set())
    return NodeUnschedulable()
