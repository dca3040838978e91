"""The nodes grouped by how they read in-tree volumes, over the node mirror.

An in-tree PV (an AWS EBS disk, a GCE PD, ...) reads differently from node to node, by the
node's CSINode: VolumeBinding checks the PV's node affinity as translated for the CSI driver on
a node whose CSINode lists the plugin as migrated, and NodeVolumeLimits counts the volume under
that driver on any node with a CSINode (Portworx: where listed; see
:mod:`kopf_scheduler.plugins.csi_translation`). The nodes without a CSINode, and those whose
CSINodes list the same plugins, agree on every such reading, so the batch Filters of both
plugins decide each group as one, with one CSINode of the group standing for all. A cluster has
few groups (typically the nodes running a driver, those with migration on, and the rest).

The groups are worked out from the storage cache's CSINodes and kept until a CSINode changes or
the mirror's layout is rebuilt; a node's pods changing leaves them as they are.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.storage import CSINode


class MigrationGroup:
    """Nodes that read in-tree volumes alike: without a CSINode, or listing the same plugins."""

    __slots__ = ("csi_node", "mask")

    def __init__(self, csi_node: CSINode | None, mask: api.BoolArray) -> None:
        self.csi_node = csi_node
        """The CSINode of one of the nodes (``None`` for the nodes without one)."""
        self.mask = mask
        """The group's positions in the mirror."""


class MigratedNodes:
    """The :class:`MigrationGroup` partition of one mirror's nodes under one storage cache."""

    def __init__(self, mirror: api.NodeMirror, storage: api.StorageCache) -> None:
        self.mirror = mirror
        self.storage = storage
        self._groups: list[MigrationGroup] | None = None
        mirror.subscribe(self)
        storage.subscribe(self)

    @classmethod
    def over(
        cls, kept: MigratedNodes | None, mirror: api.NodeMirror, storage: api.StorageCache
    ) -> MigratedNodes:
        """``kept`` when it serves ``mirror`` and ``storage``, a new partition otherwise."""
        if kept is not None and kept.mirror is mirror and kept.storage is storage:
            return kept
        return cls(mirror, storage)

    def rows_replaced(self, positions: Sequence[int]) -> None:
        """A node's pods changed: its CSINode did not."""

    def layout_rebuilt(self) -> None:
        self._groups = None

    def storage_changed(self, kind: str, key: str) -> None:
        if kind == api.CSI_NODE_KIND:
            self._groups = None

    def groups(self) -> list[MigrationGroup]:
        """The non-empty groups, together covering every position once."""
        if self._groups is None:
            self._groups = self._partition()
        return self._groups

    def _partition(self) -> list[MigrationGroup]:
        size = self.mirror.size
        members: dict[frozenset[str], tuple[CSINode, list[int]]] = {}
        for csi_node in self.storage.csi_nodes.values():
            position = self.mirror.position.get(csi_node.name)
            if position is None:
                continue
            found = members.get(csi_node.migrated_plugins)
            if found is None:
                members[csi_node.migrated_plugins] = (csi_node, [position])
            else:
                found[1].append(position)
        rest = np.ones(size, dtype=np.bool_)
        groups: list[MigrationGroup] = []
        for csi_node, positions in members.values():
            mask = np.zeros(size, dtype=np.bool_)
            mask[positions] = True
            rest[positions] = False
            groups.append(MigrationGroup(csi_node, mask))
        if rest.any():
            groups.append(MigrationGroup(None, rest))
        return groups
