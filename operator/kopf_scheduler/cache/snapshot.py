"""The per-cycle view of the cluster that every plugin reads.

A snapshot is refreshed from the cache at the start of each scheduling cycle and is not changed
during the cycle (preemption dry runs clone the NodeInfos they modify).

The snapshot also records what each refresh changed: ``layout_version`` moves whenever the node
list is laid out anew (nodes added, removed or reordered), and ``changed_nodes`` collects the
names of nodes whose NodeInfo was replaced in place, found by the position of each name that the
snapshot indexes once per layout. Derived per-node indexes (the vectorised fast path) drain
``changed_nodes`` to stay in step in time proportional to the change, not to the cluster.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from kopf_scheduler.cache.node_info import NodeInfo


class Snapshot:
    def __init__(self) -> None:
        self.node_info_map: dict[str, NodeInfo] = {}
        self.node_info_list: list[NodeInfo] = []
        self.have_pods_with_affinity: list[NodeInfo] = []
        self.have_pods_with_required_anti_affinity: list[NodeInfo] = []
        self.namespace_labels: Mapping[str, Mapping[str, str]] = {}
        self.generation = 0
        self.layout_version = 0
        """Bumped whenever ``node_info_list`` is rebuilt rather than patched in place."""
        self.changed_nodes: set[str] = set()
        """Nodes whose entry was replaced in place since a consumer last drained this set."""
        self._positions: dict[str, int] = {}
        self._positions_layout = -1

    @classmethod
    def from_node_infos(
        cls,
        node_infos: list[NodeInfo],
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Snapshot:
        """A standalone snapshot (tests, dry runs)."""
        snapshot = cls()
        snapshot.lay_out(list(node_infos))
        snapshot.node_info_map = {n.name: n for n in node_infos}
        snapshot.rebuild_affinity_lists()
        snapshot.namespace_labels = namespace_labels or {}
        return snapshot

    def lay_out(self, node_infos: list[NodeInfo]) -> None:
        """Make ``node_infos`` the node list: a new layout, nothing changed in place yet."""
        self.node_info_list = node_infos
        self.layout_version += 1
        self.changed_nodes.clear()
        self._positions = {info.name: at for at, info in enumerate(node_infos)}
        self._positions_layout = self.layout_version

    def replace_in_place(self, info: NodeInfo) -> None:
        """Put ``info`` where its node's entry is in the list and record the node as changed.

        A node the list does not hold is left out: adding one takes a new layout. An index that
        disagrees with the list (rewritten without a new layout) is built again first.
        """
        infos = self.node_info_list
        at = self._positions_of_layout().get(info.name)
        if at is not None and (at >= len(infos) or infos[at].name != info.name):
            self._positions_layout = -1
            at = self._positions_of_layout().get(info.name)
        if at is not None:
            self.node_info_list[at] = info
            self.changed_nodes.add(info.name)

    def rebuild_affinity_lists(self) -> None:
        self.have_pods_with_affinity = [n for n in self.node_info_list if n.pods_with_affinity]
        self.have_pods_with_required_anti_affinity = [
            n for n in self.node_info_list if n.pods_with_required_anti_affinity
        ]

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def in_list_order(self, names: Collection[str]) -> list[NodeInfo]:
        """The entries of those ``names`` the snapshot has, in ``node_info_list``'s order.

        A PreFilter plugin that names the only nodes a pod can go to (a DaemonSet pod's node
        affinity names one) leaves a few nodes out of thousands: finding them by name costs the
        names, where walking the list to keep its order would cost every node on every attempt.
        Positions are indexed once per layout, and again when an entry is not where the index
        says or a known node is missing from it (the list was changed without a new layout).
        """
        infos = self.node_info_list
        for _ in range(2):
            positions = self._positions_of_layout()
            found = sorted((positions[name], name) for name in names if name in positions)
            if all(at < len(infos) and infos[at].name == name for at, name in found) and all(
                name in positions for name in names if name in self.node_info_map
            ):
                break
            self._positions_layout = -1
        return [infos[at] for at, _ in found]

    def _positions_of_layout(self) -> dict[str, int]:
        if self._positions_layout != self.layout_version or len(self._positions) != len(
            self.node_info_list
        ):
            self._positions = {info.name: at for at, info in enumerate(self.node_info_list)}
            self._positions_layout = self.layout_version
        return self._positions

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """Whether any pod on any node (bound or assumed) uses claim ``namespace/name``.

        Scans the nodes: only pods with ReadWriteOncePod claims ask, and they are rare.
        """
        return any(key in info.pvc_ref_counts for info in self.node_info_list)

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def labels_of_namespace(self, namespace: str) -> Mapping[str, str]:
        return self.namespace_labels.get(namespace, {})
