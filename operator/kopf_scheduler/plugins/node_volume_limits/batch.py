"""NodeVolumeLimits over all nodes at once: the Filter's arithmetic on the node index's columns.

The incoming pod's volumes are counted once, or, when the count depends on the node's CSINode
(an in-tree volume), once per group of nodes that read in-tree volumes alike
(:mod:`kopf_scheduler.plugins.migrated_nodes`). For each driver among them, a node is rejected
where it sets a limit and its attached count plus the pod's volumes of that driver exceed it;
the few nodes where a pod already uses one of the incoming pod's volumes (which is then free
there) are decided from their own entry instead.

The batch form declines (``Fallback``), leaving the attempt to the per-node Filter, when:
- the incoming pod's volumes cannot be counted (a missing or foreign claim, an untranslatable
  inline volume);
- a node with limits holds a pod whose volumes cannot be counted (the Filter's Error there);
- a nominated pod that counts against the incoming one has volumes (the Filter counts them on
  their node);
- the attempt is a preemption dry run, which takes pods off nodes
  (:class:`~kopf_scheduler.plugin_api.BatchFilterOverPodVolumes`).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.storage import CSINode
from kopf_scheduler.plugins.migrated_nodes import MigratedNodes
from kopf_scheduler.plugins.node_volume_limits.counting import (
    MIGRATION_READ,
    AttachableVolumes,
    ClaimNotFoundError,
    CountingError,
    Read,
    VolumeCounter,
    exceeds,
    may_need_attaching,
)
from kopf_scheduler.plugins.node_volume_limits.node_index import NO_LIMIT, NodeVolumeIndex


class BatchVolumeLimits(api.BatchFilterOverPodVolumes):
    """The plugin's batch Filter, holding the node index of the columns it was last given."""

    def __init__(self, handle: api.Handle, counter: VolumeCounter) -> None:
        self._handle = handle
        self._counter = counter
        self._index: NodeVolumeIndex | None = None
        self._migration: MigratedNodes | None = None

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        if not pod.volumes:
            return None
        wanted = self._incoming_volumes(pod, nodes.mirror)
        if not any(new_volumes for _, new_volumes in wanted):
            return None
        self._refuse_nominated_volumes(pod, nodes.mirror)
        index = self._index_for(nodes.mirror)
        index.refresh()
        if index.failed_with_limits():
            raise api.Fallback
        fails = np.zeros(nodes.mirror.size, dtype=np.bool_)
        for members, new_volumes in wanted:
            if new_volumes:
                fails |= _exceeding(new_volumes, index, members)
        return api.NodeRejections(fails) if fails.any() else None

    def _incoming_volumes(
        self, pod: Pod, mirror: api.NodeMirror
    ) -> list[tuple[api.BoolArray | None, AttachableVolumes]]:
        """The pod's volumes as each group of nodes counts them: one entry for all nodes (mask
        ``None``) unless the count depends on the node's CSINode, then one per group."""
        reads: set[Read] = set()
        unmigrated = self._collect(pod, None, reads)
        if MIGRATION_READ not in reads:
            return [(None, unmigrated)]
        self._migration = MigratedNodes.over(self._migration, mirror, self._handle.storage)
        return [
            (
                group.mask,
                unmigrated if group.csi_node is None else self._collect(pod, group.csi_node),
            )
            for group in self._migration.groups()
        ]

    def _collect(
        self, pod: Pod, csi_node: CSINode | None, reads: set[Read] | None = None
    ) -> AttachableVolumes:
        new_volumes: AttachableVolumes = {}
        try:
            self._counter.collect(pod, csi_node, new_volumes, incoming=True, reads=reads)
        except (ClaimNotFoundError, CountingError):
            raise api.Fallback from None
        return new_volumes

    def _refuse_nominated_volumes(self, pod: Pod, mirror: api.NodeMirror) -> None:
        nominator = self._handle.nominator
        for _, nominated in api.nominated_pods_by_node(nominator, mirror.names):
            for other in nominated:
                if api.counts_against(other, pod) and any(
                    may_need_attaching(volume) for volume in other.volumes
                ):
                    raise api.Fallback

    def _index_for(self, mirror: api.NodeMirror) -> NodeVolumeIndex:
        index = self._index
        storage = self._handle.storage
        if index is None or index.mirror is not mirror or index.storage is not storage:
            index = self._index = NodeVolumeIndex(mirror, storage, self._counter)
        return index


def _exceeding(
    new_volumes: AttachableVolumes, index: NodeVolumeIndex, members: api.BoolArray | None
) -> api.BoolArray:
    """The nodes among ``members`` (``None``: all) where ``new_volumes`` exceed a limit."""
    fails = np.zeros(index.mirror.size, dtype=np.bool_)
    for driver, count in Counter(new_volumes.values()).items():
        limits = index.limits.get(driver)
        if limits is None:
            continue
        attached = index.attached.get(driver)
        over = limits < attached + count if attached is not None else limits < count
        fails |= (limits != NO_LIMIT) & over
    shared: set[int] = set()
    for volume in new_volumes:
        shared |= index.users(volume)
    for position in shared:
        entry = index.entry(position)
        fails[position] = exceeds(new_volumes, entry.in_use.keys(), entry.attached, entry.limits)
    return fails if members is None else fails & members
