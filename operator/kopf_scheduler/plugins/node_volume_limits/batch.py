"""NodeVolumeLimits over all nodes at once: the Filter's arithmetic on the node index's columns.

The incoming pod's volumes are counted once. For each driver among them, a node is rejected
where it sets a limit and its attached count plus the pod's volumes of that driver exceed it;
the few nodes where a pod already uses one of the incoming pod's volumes (which is then free
there) are decided from their own entry instead.

The batch form declines (``Fallback``), leaving the attempt to the per-node Filter, when:
- the incoming pod's volumes cannot be counted (a missing or foreign claim, an untranslatable
  inline volume), or their count depends on which in-tree plugins a node has migrated and some
  node has migrated one;
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

    def filter_nodes(
        self, state: api.CycleState, pod: Pod, nodes: api.NodeColumns, free: api.FreeColumns
    ) -> api.NodeRejections | None:
        if not pod.volumes:
            return None
        new_volumes: AttachableVolumes = {}
        reads: set[Read] = set()
        try:
            self._counter.collect(pod, None, new_volumes, incoming=True, reads=reads)
        except (ClaimNotFoundError, CountingError):
            raise api.Fallback from None
        if MIGRATION_READ in reads and self._handle.storage.migrating_csi_nodes():
            raise api.Fallback
        if not new_volumes:
            return None
        self._refuse_nominated_volumes(pod, nodes.mirror)
        index = self._index_for(nodes.mirror)
        index.refresh()
        if index.failed_with_limits():
            raise api.Fallback
        fails = np.zeros(nodes.mirror.size, dtype=np.bool_)
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
            fails[position] = exceeds(
                new_volumes, entry.in_use.keys(), entry.attached, entry.limits
            )
        return api.NodeRejections(fails) if fails.any() else None

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
