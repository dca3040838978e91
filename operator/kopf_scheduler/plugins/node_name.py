"""NodeName: a pod with ``spec.nodeName`` set fits only that node.

The batch Filter covers the usual pods, those without ``spec.nodeName``, which fit everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


class NodeName:
    name: ClassVar[str] = NAME

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        if not pod.node_name or pod.node_name == node_info.name:
            return api.SUCCESS
        return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON)

    def batch_filter(self) -> NodeName:
        return self

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        if pod.node_name:
            raise api.Fallback
        return None

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(api.ClusterEvent(api.EventResource.NODE, api.ActionType.ADD))
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> NodeName:
    api.reject_unknown(api.ensure_mapping(args), set())
    return NodeName()
