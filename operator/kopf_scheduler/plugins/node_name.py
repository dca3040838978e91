"""NodeName: a pod with ``spec.nodeName`` set fits only that node.

The batch Filter covers the usual pods, those without ``spec.nodeName``, which fit everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler.model.pod import Pod
from kopf_scheduler.plugin_api import (
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Fallback,
    FreeColumns,
    Handle,
    NodeColumns,
    NodeInfo,
    NodeRejections,
    Status,
    ensure_mapping,
    reject_unknown,
)

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


class NodeName:
    name: ClassVar[str] = NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        if not pod.node_name or pod.node_name == node_info.name:
            return SUCCESS
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)

    def batch_filter(self) -> NodeName:
        return self

    def filter_nodes(
        self, state: CycleState, pod: Pod, nodes: NodeColumns, free: FreeColumns
    ) -> NodeRejections | None:
        if pod.node_name:
            raise Fallback
        return None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD))]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodeName:
    reject_unknown(ensure_mapping(args), set())
    return NodeName()
