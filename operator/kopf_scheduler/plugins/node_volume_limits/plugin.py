"""NodeVolumeLimits (upstream's CSILimits): keep a node within the attach limits its CSI drivers
publish.

A CSI driver tells, in the node's CSINode object, how many of its volumes the node can have
attached (``spec.drivers[].allocatable.count``). A driver without a count, or a node without a
CSINode, sets no limit; a count of 0 lets nothing of that driver in.

Every volume is identified by ``<driver>/<volume handle>``:
- a claim bound to a CSI PV (``spec.volumeName``, bind completed or not) uses the PV's driver and
  handle; an in-tree PV counts under its CSI driver when the node has migrated its plugin (see
  :mod:`kopf_scheduler.plugins.csi_translation`), any other PV not at all;
- a claim without a volume name, or naming a PV not (yet) known, counts under its
  StorageClass's provisioner (or the CSI driver of a migrated in-tree provisioner) with a handle
  made from the claim's namespace and name behind a random per-instance prefix, so that it cannot
  be mistaken for a real volume; a claim without class or with an unknown class is not counted
  (it has to be bound before it can be scheduled);
- an inline in-tree volume of a migrated plugin counts under its CSI driver.

Filter counts the distinct volumes of the pods on the node plus the node's VolumeAttachments of
CSI PVs not among them (v1.34 counts attachments too, so a volume still attached after its pod
left keeps its slot). A volume of the incoming pod that a pod on the node already uses is free;
one that is attached but used by no pod there is counted twice, once as attached and once as
new, as upstream does. When ``attached + new`` exceeds the limit of any driver, the node is
rejected with ``node(s) exceed max volume count``: Unschedulable, since preempting pods that hold
volumes of that driver frees slots.

Claims are looked up as the API server last reported them (upstream reads its informers here,
not the assume cache). A claim of the incoming pod that does not exist rejects the node as
UnschedulableAndUnresolvable; a missing claim of a pod already on the node is simply not counted.
An ephemeral volume's claim that the pod does not control, and an inline volume the translation
library refuses, are errors.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from typing import Any, ClassVar

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import EPHEMERAL, PERSISTENT_VOLUME_CLAIM, PodVolume
from kopf_scheduler.model.storage import CSINode, PersistentVolumeClaim, VolumeAttachment
from kopf_scheduler.plugins.claim_hints import claim_change_hint
from kopf_scheduler.plugins.csi_translation import (
    TranslationError,
    csi_volume_handle,
    is_migration_on,
    plugin_for_source,
    plugin_named,
)

NAME = "NodeVolumeLimits"
REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"

VOLUME_ID_PREFIX_LENGTH = 32
_VOLUME_ID_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters of the random prefix (upstream's random-string alphabet)."""

AttachableVolumes = dict[str, str]
"""``<driver>/<volume handle>`` -> driver, one entry per distinct volume."""


class _ClaimNotFoundError(Exception):
    """The incoming pod's claim does not exist: nothing but creating it helps."""

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(
            f'looking up PVC {namespace}/{name}: persistentvolumeclaim "{name}" not found'
        )


class _CountingError(Exception):
    """A volume the plugin cannot account for; the node's verdict is an Error status."""


def volume_limits(csi_node: CSINode | None) -> dict[str, int]:
    """The attach limit of each driver of the node that publishes one."""
    if csi_node is None:
        return {}
    return {
        driver.name: driver.allocatable_count
        for driver in csi_node.drivers.values()
        if driver.allocatable_count is not None
    }


def random_volume_id_prefix(rng: random.Random) -> str:
    return "".join(rng.choice(_VOLUME_ID_ALPHABET) for _ in range(VOLUME_ID_PREFIX_LENGTH))


def _unique_name(driver: str, volume_handle: str) -> str:
    return f"{driver}/{volume_handle}"


def _uses_claim(volume: PodVolume) -> bool:
    return volume.source_kind in (PERSISTENT_VOLUME_CLAIM, EPHEMERAL)


def _may_need_attaching(volume: PodVolume) -> bool:
    """A claim, or an inline volume of an in-tree plugin that has a CSI driver."""
    return _uses_claim(volume) or plugin_for_source(volume.source_kind) is not None


def _controlled_by(claim: PersistentVolumeClaim, pod: Pod) -> bool:
    return claim.namespace == pod.namespace and claim.controller_uid == pod.uid


class NodeVolumeLimits:
    name: ClassVar[str] = NAME

    def __init__(self, handle: api.Handle, volume_id_prefix: str) -> None:
        self._handle = handle
        self._volume_id_prefix = volume_id_prefix

    def pre_filter(
        self, state: api.CycleState, pod: Pod, nodes: list[api.NodeInfo]
    ) -> tuple[api.PreFilterResult | None, api.Status]:
        if any(_may_need_attaching(volume) for volume in pod.volumes):
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
        new_volumes: AttachableVolumes = {}
        try:
            self._collect_attachable(pod, csi_node, new_volumes, incoming=True)
        except _ClaimNotFoundError as error:
            return api.Status(api.Code.UNSCHEDULABLE_AND_UNRESOLVABLE, str(error))
        except _CountingError as error:
            return api.Status.from_error(error)
        if not new_volumes:
            return api.SUCCESS
        limits = volume_limits(csi_node)
        if not limits:
            return api.SUCCESS

        in_use: AttachableVolumes = {}
        try:
            for existing in node_info.pods:
                self._collect_attachable(existing, csi_node, in_use, incoming=False)
        except _CountingError as error:
            return api.Status.from_error(error)
        attached = Counter(in_use.values())
        for unique_name in in_use:
            new_volumes.pop(unique_name, None)
        for unique_name, driver in self._attachments_on(node.name).items():
            if unique_name not in in_use:
                attached[driver] += 1

        for driver, count in Counter(new_volumes.values()).items():
            limit = limits.get(driver)
            if limit is not None and attached[driver] + count > limit:
                return api.Status(api.Code.UNSCHEDULABLE, REASON_MAX_VOLUME_COUNT)
        return api.SUCCESS

    def _collect_attachable(
        self, pod: Pod, csi_node: CSINode | None, into: AttachableVolumes, *, incoming: bool
    ) -> None:
        """Add ``pod``'s countable volumes to ``into``.

        Raises _ClaimNotFoundError for a missing claim of the ``incoming`` pod (other pods'
        missing claims are skipped) and _CountingError for a foreign ephemeral claim or an
        inline volume that cannot be translated.
        """
        storage = self._handle.storage
        for volume in pod.volumes:
            if not _uses_claim(volume):
                self._collect_inline(volume, csi_node, into)
                continue
            claim = storage.claims.get_api_object(f"{pod.namespace}/{volume.claim_name}")
            if claim is None:
                if incoming:
                    raise _ClaimNotFoundError(pod.namespace, volume.claim_name)
                continue
            if volume.is_ephemeral and not _controlled_by(claim, pod):
                raise _CountingError(
                    f"PVC {claim.namespace}/{claim.name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            driver, volume_handle = self._claim_volume(claim, csi_node)
            if driver and volume_handle:
                into[_unique_name(driver, volume_handle)] = driver

    @staticmethod
    def _collect_inline(
        volume: PodVolume, csi_node: CSINode | None, into: AttachableVolumes
    ) -> None:
        plugin = plugin_for_source(volume.source_kind)
        if plugin is None or not is_migration_on(csi_node, plugin):
            return
        try:
            volume_handle = csi_volume_handle(plugin, volume.source, {})
        except TranslationError as error:
            raise _CountingError(
                f"converting volume({volume.name}) from inline to csi: {error}"
            ) from error
        if volume_handle is not None:
            into[_unique_name(plugin.driver, volume_handle)] = plugin.driver

    def _claim_volume(
        self, claim: PersistentVolumeClaim, csi_node: CSINode | None
    ) -> tuple[str, str]:
        """The driver and volume handle of the claim's volume; empty strings: not counted."""
        if not claim.volume_name:
            return self._class_volume(claim, csi_node)
        volume = self._handle.storage.volumes.get_api_object(claim.volume_name)
        if volume is None:
            return self._class_volume(claim, csi_node)
        if volume.csi is not None:
            return volume.csi.driver, volume.csi.volume_handle
        if volume.in_tree_source is None:
            return "", ""
        source_kind, source = volume.in_tree_source
        plugin = plugin_for_source(source_kind)
        if plugin is None or not is_migration_on(csi_node, plugin):
            return "", ""
        try:
            volume_handle = csi_volume_handle(plugin, source, volume.labels)
        except TranslationError:
            return "", ""
        return plugin.driver, volume_handle or ""

    def _class_volume(
        self, claim: PersistentVolumeClaim, csi_node: CSINode | None
    ) -> tuple[str, str]:
        """A claim without a known PV counts under its class's provisioner."""
        if not claim.storage_class_name:
            return "", ""
        storage_class = self._handle.storage.storage_class(claim.storage_class_name)
        if storage_class is None:
            return "", ""
        volume_handle = f"{self._volume_id_prefix}-{claim.namespace}/{claim.name}"
        plugin = plugin_named(storage_class.provisioner)
        if plugin is None:
            return storage_class.provisioner, volume_handle
        if not is_migration_on(csi_node, plugin):
            return "", ""
        return plugin.driver, volume_handle

    def _attachments_on(self, node_name: str) -> AttachableVolumes:
        """The node's VolumeAttachments of known CSI PVs, by the attacher's name."""
        storage = self._handle.storage
        attachments: AttachableVolumes = {}
        for attachment in storage.attachments.values():
            if attachment.node_name != node_name or not attachment.attacher:
                continue
            if not attachment.persistent_volume_name:
                continue
            volume = storage.volumes.get_api_object(attachment.persistent_volume_name)
            if volume is None or volume.csi is None:
                continue
            unique_name = _unique_name(attachment.attacher, volume.csi.volume_handle)
            attachments[unique_name] = attachment.attacher
        return attachments

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
    if any(_may_need_attaching(volume) for volume in deleted.volumes):
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
