"""NodeVolumeLimits: a node takes no more volumes of a CSI driver than the driver can attach there.

The limits come from the node's CSINode; volumes are the claims, generic ephemeral volumes and
migrated in-tree volumes of the pods on the node, plus the node's VolumeAttachments
(:mod:`.counting`). In-tree plugins migrated to CSI drivers are described in
:mod:`kopf_scheduler.plugins.csi_translation`. The plugin (:mod:`.plugin`) has a batch Filter
(:mod:`.batch`) over counts kept per node (:mod:`.node_index`).
"""

from kopf_scheduler.plugins.node_volume_limits.counting import volume_limits
from kopf_scheduler.plugins.node_volume_limits.plugin import (
    NAME,
    REASON_MAX_VOLUME_COUNT,
    NodeVolumeLimits,
    is_schedulable_after_attachment_deleted,
    is_schedulable_after_claim_added,
    is_schedulable_after_csi_node_updated,
    is_schedulable_after_pod_deleted,
    new,
)

__all__ = [
    "NAME",
    "REASON_MAX_VOLUME_COUNT",
    "NodeVolumeLimits",
    "is_schedulable_after_attachment_deleted",
    "is_schedulable_after_claim_added",
    "is_schedulable_after_csi_node_updated",
    "is_schedulable_after_pod_deleted",
    "new",
    "volume_limits",
]
