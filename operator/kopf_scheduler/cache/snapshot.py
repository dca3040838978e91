"""The per-cycle view of the cluster that every plugin reads.

A snapshot is refreshed from the cache at the start of each scheduling cycle and is not changed
during the cycle (preemption dry runs clone the NodeInfos they modify).

The snapshot also records what each refresh changed: ``layout_version`` moves whenever the node
list is rebuilt (nodes added, removed or reordered), and ``changed_nodes`` collects the names of
nodes whose NodeInfo was replaced in place. Derived per-node indexes (the vectorised fast path)
drain ``changed_nodes`` to stay in step in time proportional to the change, not to the cluster.
"""

from __future__ import annotations

from collections.abc import Mapping

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

    @classmethod
    def from_node_infos(
        cls,
        node_infos: list[NodeInfo],
        namespace_labels: Mapping[str, Mapping[str, str]] | None = None,
    ) -> Snapshot:
        """A standalone snapshot (tests, dry runs)."""
        snapshot = cls()
        snapshot.node_info_list = list(node_infos)
        snapshot.node_info_map = {n.name: n for n in node_infos}
        snapshot.rebuild_affinity_lists()
        snapshot.namespace_labels = namespace_labels or {}
        snapshot.layout_version = 1
        return snapshot

    def rebuild_affinity_lists(self) -> None:
        self.have_pods_with_affinity = [n for n in self.node_info_list if n.pods_with_affinity]
        self.have_pods_with_required_anti_affinity = [
            n for n in self.node_info_list if n.pods_with_required_anti_affinity
        ]

    def get(self, name: str) -> NodeInfo | None:
        return self.node_info_map.get(name)

    def is_pvc_used_by_pods(self, key: str) -> bool:
        """Whether any pod on any node (bound or assumed) uses claim ``namespace/name``.

        Scans the nodes: only pods with ReadWriteOncePod claims ask, and they are rare.
        """
        return any(key in info.pvc_ref_counts for info in self.node_info_list)

    def num_nodes(self) -> int:
        return len(self.node_info_list)

    def labels_of_namespace(self, namespace: str) -> Mapping[str, str]:
        return self.namespace_labels.get(namespace, {})
