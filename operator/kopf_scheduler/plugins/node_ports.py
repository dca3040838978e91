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
from typing import Any, ClassVar

from kopf_scheduler.model.pod import HostPort, Pod
from kopf_scheduler.plugin_api import (
    SKIP,
    SUCCESS,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    Code,
    CycleState,
    EventResource,
    Handle,
    HostPortUsage,
    NodeInfo,
    PreFilterExtensions,
    PreFilterResult,
    QueueingHint,
    StateKey,
    Status,
    ensure_mapping,
    reject_unknown,
)

NAME = "NodePorts"
REASON_PORTS = "node(s) didn't have free ports for the requested pod ports"


class _PreFilterState:
    """The host ports the pod wants. Unaffected by other pods, so clones share it."""

    __slots__ = ("ports",)

    def __init__(self, ports: tuple[HostPort, ...]) -> None:
        self.ports = ports

    def clone(self) -> _PreFilterState:
        return self


PRE_FILTER_KEY: StateKey[_PreFilterState] = StateKey("PreFilter" + NAME)


def fits_ports(wanted: Iterable[HostPort], in_use: HostPortUsage) -> bool:
    """Whether none of ``wanted`` conflicts with the ports in ``in_use``."""
    return not any(in_use.conflicts(port) for port in wanted)


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """Whether ``pod``'s host ports are all free on the node."""
    return fits_ports(pod.host_ports, node_info.used_ports)


def _is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> QueueingHint:
    """Queue only when the deleted pod was placed (or nominated) and held a port ``pod`` needs."""
    deleted = old
    if not isinstance(deleted, Pod):
        return QueueingHint.QUEUE
    if not deleted.node_name and not deleted.nominated_node_name:
        return QueueingHint.QUEUE_SKIP
    if not deleted.host_ports:
        return QueueingHint.QUEUE_SKIP
    freed = HostPortUsage()
    for port in deleted.host_ports:
        freed.add(port)
    if fits_ports(pod.host_ports, freed):
        return QueueingHint.QUEUE_SKIP
    return QueueingHint.QUEUE


class NodePorts:
    name: ClassVar[str] = NAME

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: list[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status]:
        if not pod.host_ports:
            return None, SKIP
        state.write(PRE_FILTER_KEY, _PreFilterState(pod.host_ports))
        return None, SUCCESS

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status:
        pre_filter = state.get(PRE_FILTER_KEY)
        if pre_filter is None:
            return Status(Code.ERROR, f"{PRE_FILTER_KEY.name!r} not found in the cycle state")
        if fits_ports(pre_filter.ports, node_info.used_ports):
            return SUCCESS
        return Status(Code.UNSCHEDULABLE, REASON_PORTS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(EventResource.POD, ActionType.DELETE),
                _is_schedulable_after_pod_deleted,
            ),
            ClusterEventWithHint(ClusterEvent(EventResource.NODE, ActionType.ADD)),
        ]


def new(args: Mapping[str, Any] | None, handle: Handle) -> NodePorts:
    reject_unknown(ensure_mapping(args), set())
    return NodePorts()
