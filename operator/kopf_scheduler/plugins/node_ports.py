"""NodePorts: a pod that asks for host ports only fits a node where those ports are free.

PreFilter collects the host ports of the pod's containers and restartable (sidecar) init
containers; a pod without any skips the plugin for the cycle. Filter then checks them against
the ports the node's pods already hold, where ``0.0.0.0`` (the default host IP) conflicts with
every address. The rejection is plain Unschedulable: evicting the pod that holds the port frees
it, so preemption may help.

A pod rejected here can only become schedulable when a pod holding a conflicting port goes away
or a node is added; pod updates cannot change container ports.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import HostPort, Pod

NAME = "NodePorts"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"


@dataclass(frozen=True, slots=True, eq=False)
class _PreFilterState(api.SharedState):
    """The host ports the pod wants. Unaffected by other pods, so clones share it."""

    ports: tuple[HostPort, ...]


PRE_FILTER_KEY: api.StateKey[_PreFilterState] = api.StateKey("PreFilter" + NAME)


def fits_ports(wanted: Iterable[HostPort], in_use: api.HostPortUsage) -> bool:
    """Whether none of ``wanted`` conflicts with the ports in ``in_use``."""
    return not any(in_use.conflicts(port) for port in wanted)


def fits(pod: Pod, node_info: api.NodeInfo) -> bool:
    """Whether ``pod``'s host ports are all free on the node."""
    return fits_ports(pod.host_ports, node_info.used_ports)


def _is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue only when the deleted pod was placed (or nominated) and held a port ``pod`` needs."""
    deleted = old
    if not isinstance(deleted, Pod):
        return api.QueueingHint.QUEUE
    if not deleted.node_name and not deleted.nominated_node_name:
        return api.QueueingHint.QUEUE_SKIP
    if not deleted.host_ports:
        return api.QueueingHint.QUEUE_SKIP
    freed = api.HostPortUsage()
    for port in deleted.host_ports:
        freed.add(port)
    if fits_ports(pod.host_ports, freed):
        return api.QueueingHint.QUEUE_SKIP
    return api.QueueingHint.QUEUE


class NodePorts:
    name: ClassVar[str] = NAME

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        if not pod.host_ports:
            return None, api.SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(pod.host_ports))
        return None, api.SUCCESS

    def pre_filter_extensions(self) -> api.PreFilterExtensions | None:
        return None

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return api.Status(
                api.Code.ERROR, f"{PRE_FILTER_KEY.name!r} not found in the cycle state"
            )
        if fits_ports(pre_filter.ports, node_info.used_ports):
            return api.SUCCESS
        return api.Status(api.Code.UNSCHEDULABLE, REASON_PORTS)

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.POD, api.ActionType.DELETE),
                _is_schedulable_after_pod_deleted,
            ),
            api.ClusterEventWithHint(api.ClusterEvent(api.EventResource.NODE, api.ActionType.ADD)),
        ]


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> NodePorts:
    api.reject_unknown(api.ensure_mapping(args), set())
    return NodePorts()
