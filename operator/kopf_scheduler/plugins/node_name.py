"""NodeName: a pod with ``spec.nodeName`` set fits only that node.

The batch Filter covers the usual pods, those without ``spec.nodeName``, which fit everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler.cache.node_info import NodeInfo
from kopf_scheduler.framework.args import ensure_mapping, reject_unknown
from kopf_scheduler.framework.cycle_state import CycleState
from kopf_scheduler.framework.events import (
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    EventResource,
)
from kopf_scheduler.framework.handle import Handle
from kopf_scheduler.framework.interfaces import NodeRejections
from kopf_scheduler.framework.node_columns.columns import NodeColumns
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.framework.node_columns.free_capacity import FreeColumns
from kopf_scheduler.framework.status import SUCCESS, Code, Status
from kopf_scheduler.model.pod import Pod

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
