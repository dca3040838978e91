"""NodeUnschedulable: keep pods off cordoned nodes unless they tolerate the unschedulable taint.

The batch Filter reads the node columns' cordon flags: a pod that tolerates the taint passes
everywhere, any other is rejected on every cordoned node.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.node import Node
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.taints import NO_SCHEDULE, Taint, tolerations_tolerate

NAME = "NodeUnschedulable"
REASON_UNSCHEDULABLE = "node(s) were unschedulable"
REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", NO_SCHEDULE)


def _is_schedulable_after_node_change(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    if not isinstance(new, Node):
        return api.QueueingHint.QUEUE
    if not new.unschedulable:
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


class NodeUnschedulable:
    name: ClassVar[str] = NAME

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        node = node_info.node
        if node is None:
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNKNOWN_CONDITION)
        if not node.unschedulable:
            return api.SUCCESS
        if tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT):
            return api.SUCCESS
        return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON_UNSCHEDULABLE)

    def batch_filter(self) -> NodeUnschedulable:
        return self

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        unschedulable = nodes.mirror.unschedulable
        if not unschedulable.any():
            return None
        if tolerations_tolerate(pod.tolerations, UNSCHEDULABLE_TAINT):
            return None
        return api.NodeRejections(unschedulable.copy())

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.NODE, api.ActionType.ADD | api.ActionType.UPDATE_NODE_TAINT
                ),
                _is_schedulable_after_node_change,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(
                    api.EventResource.UNSCHEDULED_POD, api.ActionType.UPDATE_POD_TOLERATIONS
                )
            ),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> NodeUnschedulable:
    api.reject_unknown(api.ensure_mapping(args), set())
    return NodeUnschedulable()
