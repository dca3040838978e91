"""VolumeBinding's Filter over all nodes at once, for pods whose claims are all bound.

With every claim bound there is nothing to match or provision: a node fits when the PV of each
claim admits it by its required node affinity, and otherwise gets the one rejection
``node(s) didn't match PersistentVolume's node affinity``. The affinities are evaluated on the
node label columns.

Everything else is left to the per-node Filter (``Fallback``): a claim whose PV is not in the
cache, an affinity with field requirements (the per-node check matches labels only), and an
in-tree PV whose plugin some node has migrated to CSI (its affinity is then translated per
node, and the translation may refuse it).
"""

from __future__ import annotations

from collections.abc import Sequence

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.storage import PersistentVolumeClaim
from kopf_scheduler.plugins.csi_translation import is_migration_on, plugin_for_source


def nodes_admitting_bound_volumes(
    claims: Sequence[PersistentVolumeClaim], nodes: api.NodeColumns, storage: api.StorageCache
) -> api.BoolArray | None:
    """Which nodes every claim's PV admits; ``None`` when all of them do."""
    admitted: api.BoolArray | None = None
    for claim in claims:
        volume = storage.volume(claim.volume_name)
        if volume is None:
            raise api.Fallback
        in_tree = volume.in_tree_source
        plugin = plugin_for_source(in_tree[0]) if in_tree is not None else None
        if plugin is not None and any(
            is_migration_on(csi_node, plugin) for csi_node in storage.migrating_csi_nodes()
        ):
            raise api.Fallback
        affinity = volume.node_affinity
        if affinity is None:
            continue
        if any(term.field_requirements for term in affinity.terms):
            raise api.Fallback
        mask = nodes.selector_mask({}, affinity.terms)
        admitted = mask if admitted is None else admitted & mask
    return admitted
