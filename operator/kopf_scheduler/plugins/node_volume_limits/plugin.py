"""NodeVolumeLimits (upstream's CSILimits): keep a node within the attach limits its CSI drivers
publish.

A CSI driver tells, in the node's CSINode object, how many of its volumes the node can have
attached (``spec.drivers[].allocatable.count``). A driver without a count, or a node without a
CSINode, sets no limit; a count of 0 lets nothing of that driver in. How volumes are identified
and counted is in :mod:`.counting`.

Filter counts the distinct volumes of the pods on the node plus the node's VolumeAttachments of
CSI PVs not among them. A volume of the incoming pod that a pod on the node already uses is free;
one that is attached but used by no pod there is counted twice, once as attached and once as
new, as upstream does. When ``attached + new`` exceeds the limit of any driver, the node is
rejected with ``node(s) exceed max volume count``: Unschedulable, since preempting pods that hold
volumes of that driver frees slots. A missing claim of the incoming pod rejects the node as
UnschedulableAndUnresolvable; a volume that cannot be counted is an Error.

The batch form (:mod:`.batch`) answers for every node at once from counts kept per node
(:mod:`.node_index`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import PERSISTENT_VOLUME_CLAIM
from kopf_scheduler.model.storage import CSINode, VolumeAttachment
from kopf_scheduler.plugins.claim_hints import claim_change_hint
from kopf_scheduler.plugins.csi_translation import (
    TranslationError,
    csi_volume_handle,
    plugin_for_source,
)
from kopf_scheduler.plugins.node_volume_limits.batch import BatchVolumeLimits
from kopf_scheduler.plugins.node_volume_limits.counting import (
    AttachableVolumes,
    ClaimNotFoundError,
    CountingError,
    VolumeCounter,
    exceeds,
    may_need_attaching,
    random_volume_id_prefix,
    volume_limits,
)

NAME = "NodeVolumeLimits"
REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"


class NodeVolumeLimits:
    name: ClassVar[str] = NAME

    def __init__(self, handle: api.Handle, volume_id_prefix: str) -> None:
        self._handle = handle
        self._counter = VolumeCounter(handle, volume_id_prefix)
        self._batch = BatchVolumeLimits(handle, self._counter)

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        if any(may_need_attaching(volume) for volume in pod.volumes):
            return None, api.SUCCESS
        return None, api.SKIP

    def pre_filter_extensions(self) -> api.PreFilterExtensions | None:
        return None

    def filter(self, state: api.CycleState, pod: Pod, node_info: api.NodeInfo) -> api.Status:
        if not pod.volumes:
            return api.SUCCESS
        node = node_info.node
        if node is None:
            return api.Status(api.Code.ERROR, "node not found")
        csi_node = self._handle.storage.csi_node(node.name)
        counter = self._counter
        new_volumes: AttachableVolumes = {}
        try:
            counter.collect(pod, csi_node, new_volumes, incoming=True)
        except ClaimNotFoundError as error:
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(error))
        except CountingError as error:
            return api.Status.from_error(error)
        if not new_volumes:
            return api.SUCCESS
        limits = volume_limits(csi_node)
        if not limits:
            return api.SUCCESS

        try:
            in_use, attached = counter.count_node(
                node_info.pods, csi_node, counter.attachments_on(node.name)
            )
        except CountingError as error:
            return api.Status.from_error(error)
        if exceeds(new_volumes, in_use.keys(), attached, limits):
            return api.Status(api.Code.UNSCHEDULABLE, REASON_MAX_VOLUME_COUNT)
        return api.SUCCESS

    def batch_filter(self) -> BatchVolumeLimits:
        return self._batch

    def events_to_register(self) -> list[api.ClusterEventWithHint]:
        return [
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.CSI_NODE, api.ActionType.ADD)
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.CSI_NODE, api.ActionType.UPDATE_GENERIC),
                is_schedulable_after_csi_node_updated,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.POD, api.ActionType.DELETE),
                is_schedulable_after_pod_deleted,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.PERSISTENT_VOLUME_CLAIM, api.ActionType.ADD),
                is_schedulable_after_claim_added,
            ),
            api.ClusterEventWithHint(
                api.ClusterEvent(api.EventResource.VOLUME_ATTACHMENT, api.ActionType.DELETE),
                is_schedulable_after_attachment_deleted,
            ),
        ]


def is_schedulable_after_csi_node_updated(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when some driver's limit grew (a driver without a count counts as limit 0)."""
    if not isinstance(old, CSINode) or not isinstance(new, CSINode):
        return api.QueueingHint.QUEUE
    old_limits = {name: driver.allocatable_count or 0 for name, driver in old.drivers.items()}
    for name, driver in new.drivers.items():
        if (driver.allocatable_count or 0) > old_limits.get(name, 0):
            return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def is_schedulable_after_pod_deleted(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when the deleted pod was placed or nominated and had a volume that may have held
    an attach slot."""
    deleted = old
    if not isinstance(deleted, Pod):
        return api.QueueingHint.QUEUE
    if not deleted.volumes:
        return api.QueueingHint.QUEUE_SKIP
    if not deleted.node_name and not deleted.nominated_node_name:
        return api.QueueingHint.QUEUE_SKIP
    if any(may_need_attaching(volume) for volume in deleted.volumes):
        return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def is_schedulable_after_claim_added(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when the new claim is one the pod uses (by name, or as its ephemeral claim)."""
    return claim_change_hint(pod, new, ephemeral=True)


def is_schedulable_after_attachment_deleted(pod: Pod, old: Any, new: Any) -> api.QueueingHint:
    """Queue when the pod has a ``persistentVolumeClaim`` volume (whatever was detached), or an
    inline in-tree volume whose CSI driver is the attachment's attacher. An inline volume the
    translation library refuses also queues the pod: the hint cannot tell."""
    if not isinstance(old, VolumeAttachment):
        return api.QueueingHint.QUEUE
    for volume in pod.volumes:
        if volume.source_kind == PERSISTENT_VOLUME_CLAIM:
            return api.QueueingHint.QUEUE
        plugin = plugin_for_source(volume.source_kind)
        if plugin is None:
            continue
        try:
            csi_volume_handle(plugin, volume.source, {})
        except TranslationError:
            return api.QueueingHint.QUEUE
        if old.attacher == plugin.driver:
            return api.QueueingHint.QUEUE
    return api.QueueingHint.QUEUE_SKIP


def new(args: Mapping[str, Any] | None, handle: api.Handle) -> NodeVolumeLimits:
    """The plugin takes no arguments. Its volume-handle prefix only has to be unlikely to match
    a real volume handle, and it decides nothing, so it comes from the system's entropy rather
    than the profile's seeded generator (whose draws decide tie-breaks)."""
    api.reject_unknown(api.ensure_mapping(args), set())
    return NodeVolumeLimits(handle, random_volume_id_prefix(random.SystemRandom()))
