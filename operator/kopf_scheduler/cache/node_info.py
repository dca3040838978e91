"""NodeInfo: one node with the pods on it and the aggregates filters and scores read.

Aggregates (requested and non-zero requested resources, used host ports, pods with affinity terms)
are kept up to date on every add and remove so that a filter reads them in constant time.
Preemption dry runs work on clones, which share the immutable :class:`Pod` views.

A pod is removed as kube-scheduler removes it: the list's last pod takes its place. Found through
an index by UID, that is constant time on a node with thousands of pods, where every status update
of a bound pod removes and re-adds it. Clones, most of which never lose a pod, build the index
only when they first do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from kopf_scheduler.model.resources import Resource

if TYPE_CHECKING:
    from kopf_scheduler.model.node import Node
    from kopf_scheduler.model.pod import HostPort, Pod

_ANY_IP = "0.0.0.0"


class ImageState:
    """An image's size and how many nodes have it (shared by all NodeInfos that list it)."""

    __slots__ = ("num_nodes", "size")

    def __init__(self, size: int, num_nodes: int) -> None:
        self.size = size
        self.num_nodes = num_nodes


class HostPortUsage:
    """Host ports in use on a node, by IP, with the ``0.0.0.0`` wildcard rule for conflicts."""

    __slots__ = ("_by_ip",)

    def __init__(self) -> None:
        self._by_ip: dict[str, dict[tuple[str, int], int]] = {}

    def copy(self) -> HostPortUsage:
        clone = HostPortUsage()
        clone._by_ip = {ip: dict(ports) for ip, ports in self._by_ip.items()}
        return clone

    def add(self, port: HostPort) -> None:
        ports = self._by_ip.setdefault(port.ip, {})
        key = (port.protocol, port.port)
        ports[key] = ports.get(key, 0) + 1

    def remove(self, port: HostPort) -> None:
        ports = self._by_ip.get(port.ip)
        if not ports:
            return
        key = (port.protocol, port.port)
        count = ports.get(key, 0) - 1
        if count > 0:
            ports[key] = count
        else:
            ports.pop(key, None)
            if not ports:
                del self._by_ip[port.ip]

    def conflicts(self, port: HostPort) -> bool:
        key = (port.protocol, port.port)
        if port.ip == _ANY_IP:
            return any(key in ports for ports in self._by_ip.values())
        for ip in (port.ip, _ANY_IP):
            ports = self._by_ip.get(ip)
            if ports and key in ports:
                return True
        return False

    def __len__(self) -> int:
        return sum(len(p) for p in self._by_ip.values())


class NodeInfo:
    """Aggregated information about one node. ``node`` is ``None`` for a deleted node whose pods
    are still being removed; such NodeInfos never reach a snapshot's node list."""

    __slots__ = (
        "_pod_positions",
        "allocatable",
        "generation",
        "image_states",
        "node",
        "non_zero_requested",
        "pods",
        "pods_with_affinity",
        "pods_with_required_anti_affinity",
        "pvc_ref_counts",
        "requested",
        "used_ports",
    )

    def __init__(self, node: Node | None = None, pods: tuple[Pod, ...] = ()) -> None:
        self.node: Node | None = None
        self.pods: list[Pod] = []
        self._pod_positions: dict[str, int] | None = {}
        """Each pod's index in ``pods`` by UID; ``None`` until a clone first needs it."""
        self.pods_with_affinity: list[Pod] = []
        self.pods_with_required_anti_affinity: list[Pod] = []
        self.used_ports = HostPortUsage()
        self.pvc_ref_counts: dict[str, int] = {}
        """How many pods on the node name each claim in a ``persistentVolumeClaim`` volume."""
        self.requested = Resource()
        self.non_zero_requested = Resource()
        self.allocatable = Resource()
        self.image_states: dict[str, ImageState] = {}
        self.generation = 0
        if node is not None:
            self.set_node(node)
        for pod in pods:
            self.add_pod(pod)

    @property
    def name(self) -> str:
        return self.node.name if self.node is not None else ""

    def set_node(self, node: Node) -> None:
        self.node = node
        self.allocatable = node.allocatable

    def add_pod(self, pod: Pod) -> None:
        if self._pod_positions is not None:
            self._pod_positions[pod.uid] = len(self.pods)
        self.pods.append(pod)
        if pod.has_affinity_terms:
            self.pods_with_affinity.append(pod)
        if pod.has_required_anti_affinity:
            self.pods_with_required_anti_affinity.append(pod)
        self._account(pod, +1)

    def remove_pod(self, pod: Pod) -> bool:
        """Remove the pod with ``pod``'s UID; ``False`` if it was not here."""
        uid = pod.uid
        positions = self._pod_positions
        if positions is None:
            positions = self._pod_positions = {p.uid: index for index, p in enumerate(self.pods)}
        index = positions.pop(uid, None)
        if index is None:
            return False
        pods = self.pods
        existing = pods[index]
        last = pods.pop()
        if index < len(pods):
            pods[index] = last
            positions[last.uid] = index
        if existing.has_affinity_terms:
            _pop_by_uid(self.pods_with_affinity, uid)
        if existing.has_required_anti_affinity:
            _pop_by_uid(self.pods_with_required_anti_affinity, uid)
        self._account(existing, -1)
        return True

    def _account(self, pod: Pod, sign: int) -> None:
        requests = pod.requests
        non_zero = pod.non_zero_requests
        if sign > 0:
            self.requested.add(requests)
            self.non_zero_requested.milli_cpu += non_zero.milli_cpu
            self.non_zero_requested.memory += non_zero.memory
            for port in pod.host_ports:
                self.used_ports.add(port)
            for key in pod.pvc_volume_keys:
                self.pvc_ref_counts[key] = self.pvc_ref_counts.get(key, 0) + 1
        else:
            self.requested.subtract(requests)
            self.non_zero_requested.milli_cpu -= non_zero.milli_cpu
            self.non_zero_requested.memory -= non_zero.memory
            for port in pod.host_ports:
                self.used_ports.remove(port)
            for key in pod.pvc_volume_keys:
                remaining = self.pvc_ref_counts.get(key, 0) - 1
                if remaining > 0:
                    self.pvc_ref_counts[key] = remaining
                else:
                    self.pvc_ref_counts.pop(key, None)

    def clone(self) -> NodeInfo:
        clone = NodeInfo.__new__(NodeInfo)
        clone.node = self.node
        clone.pods = list(self.pods)
        clone._pod_positions = None
        clone.pods_with_affinity = list(self.pods_with_affinity)
        clone.pods_with_required_anti_affinity = list(self.pods_with_required_anti_affinity)
        clone.used_ports = self.used_ports.copy()
        clone.pvc_ref_counts = dict(self.pvc_ref_counts)
        clone.requested = self.requested.copy()
        clone.non_zero_requested = self.non_zero_requested.copy()
        clone.allocatable = self.allocatable
        clone.image_states = self.image_states
        clone.generation = self.generation
        return clone

    def __repr__(self) -> str:
        return f"NodeInfo({self.name}, pods={len(self.pods)}, requested={self.requested})"


def _pop_by_uid(pods: list[Pod], uid: str) -> None:
    """Remove the pod with ``uid`` from one of the short lists of pods with (anti-)affinity, the
    list's last pod taking its place (as in ``pods``)."""
    for index, candidate in enumerate(pods):
        if candidate.uid == uid:
            last = pods.pop()
            if index < len(pods):
                pods[index] = last
            return
