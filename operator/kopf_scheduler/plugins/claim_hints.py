"""The queueing hint the volume plugins give a PersistentVolumeClaim that was added or updated.

VolumeBinding, NodeVolumeLimits, VolumeRestrictions and VolumeZone retry a pod they rejected when
a claim it mounts appears or changes, and only then: a claim of another namespace or name cannot
change their verdicts. They differ only in which of the pod's volumes count: the first two follow
generic ephemeral volumes to the claims made for them, the other two look at
``persistentVolumeClaim`` volumes alone.
"""

from __future__ import annotations

from typing import Any

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import PERSISTENT_VOLUME_CLAIM
from kopf_scheduler.model.storage import PersistentVolumeClaim


def claim_change_hint(pod: Pod, new: Any, *, ephemeral: bool) -> api.QueueingHint:
    """QUEUE when ``new`` is a claim one of the pod's volumes names (with ``ephemeral``, the
    claim of a generic ephemeral volume too); anything not a claim is queued to be safe."""
    if not isinstance(new, PersistentVolumeClaim):
        return api.QueueingHint.QUEUE
    if new.namespace != pod.namespace:
        return api.QueueingHint.QUEUE_SKIP
    for volume in pod.volumes:
        if volume.claim_name == new.name and (
            ephemeral or volume.source_kind == PERSISTENT_VOLUME_CLAIM
        ):
            return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP
