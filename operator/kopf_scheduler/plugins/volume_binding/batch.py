"""VolumeBinding's Filter over all nodes at once, for pods whose claims are all bound.

With every claim bound there is nothing to match or provision: a node fits when the PV of each
claim admits it by its required node affinity, and otherwise gets the one rejection
``node(s) didn't match PersistentVolume's node affinity``. The affinities are evaluated on the
node label columns. An in-tree PV is read per group of nodes that read in-tree volumes alike
(:mod:`kopf_scheduler.plugins.migrated_nodes`): as translated for its CSI driver where its plugin
is migrated, as it is elsewhere.

Everything else is left to the per-node Filter (``Fallback``): a claim whose PV is not in the
cache, an affinity with field requirements (the per-node check matches labels only), and an
in-tree PV the translation refuses on nodes that migrated its plugin (the Filter's Error there).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.selectors import NodeSelector
from kopf_scheduler.model.storage import PersistentVolume, PersistentVolumeClaim
from kopf_scheduler.plugins.csi_translation import TranslationError, migrated_node_affinity
from kopf_scheduler.plugins.migrated_nodes import MigratedNodes


def nodes_admitting_bound_volumes(
    claims: Sequence[PersistentVolumeClaim],
    nodes: api.NodeColumns,
    storage: api.StorageCache,
    migration: MigratedNodes,
) -> api.BoolArray | None:
    """Which nodes every claim's PV admits; ``None`` when all of them do."""
    admitted: api.BoolArray | None = None
    for claim in claims:
        volume = storage.volume(claim.volume_name)
        if volume is None:
            raise api.Fallback
        if volume.in_tree_source is None:
            mask = _affinity_mask(volume.node_affinity, nodes)
        else:
            mask = _migrated_affinity_mask(volume, nodes, migration)
        if mask is not None:
            admitted = mask if admitted is None else admitted & mask
    return admitted


def _migrated_affinity_mask(
    volume: PersistentVolume, nodes: api.NodeColumns, migration: MigratedNodes
) -> api.BoolArray | None:
    """An in-tree PV's affinity, read in each migration group as the group's nodes read it."""
    groups = migration.groups()
    masks: list[tuple[api.BoolArray, api.BoolArray | None]] = []
    for group in groups:
        try:
            affinity = migrated_node_affinity(volume, group.csi_node)
        except TranslationError:
            raise api.Fallback from None
        masks.append((group.mask, _affinity_mask(affinity, nodes)))
    if all(mask is None for _, mask in masks):
        return None
    admitted = np.zeros(nodes.mirror.size, dtype=np.bool_)
    for members, mask in masks:
        admitted |= members if mask is None else members & mask
    return admitted


def _affinity_mask(affinity: NodeSelector | None, nodes: api.NodeColumns) -> api.BoolArray | None:
    if affinity is None:
        return None
    if any(term.field_requirements for term in affinity.terms):
        raise api.Fallback
    return nodes.selector_mask({}, affinity.terms)
