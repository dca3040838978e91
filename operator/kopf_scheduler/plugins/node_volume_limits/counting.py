"""Which attachable volumes a pod uses and a node has attached: NodeVolumeLimits' counting.

Every volume is identified by ``<driver>/<volume handle>``:
- a claim bound to a CSI PV (``spec.volumeName``, bind completed or not) uses the PV's driver and
  handle; an in-tree PV counts under its CSI driver when the node counts its plugin as migrated
  (for all but Portworx, any node with a CSINode: see
  :func:`kopf_scheduler.plugins.csi_translation.is_counted_as_migrated`), any other PV not at all;
- a claim without a volume name, or naming a PV not (yet) known, counts under its
  StorageClass's provisioner (or the CSI driver of a migrated in-tree provisioner) with a handle
  made from the claim's namespace and name behind a random per-instance prefix, so that it cannot
  be mistaken for a real volume; a claim without class or with an unknown class is not counted
  (it has to be bound before it can be scheduled);
- an inline in-tree volume of a migrated plugin counts under its CSI driver.

A node's VolumeAttachments of CSI PVs count too (v1.34 counts attachments, so a volume still
attached after its pod left keeps its slot).

Claims are looked up as the API server last reported them (upstream reads its informers here,
not the assume cache). A claim of the incoming pod that does not exist is
:class:`ClaimNotFoundError`; a missing claim of a pod already on the node is simply not counted.
An ephemeral volume's claim that the pod does not control, and an inline volume the translation
library refuses, are :class:`CountingError`.

The counter can note what each count read (:data:`Read`): the claims, volumes and classes by
kind and key, and :data:`MIGRATION_READ` when the answer depended on the node's CSINode (whether
it has one, and which in-tree plugins it lists as migrated). The node index
(:mod:`.node_index`) keeps counts until one of those changes.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping, Set

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.pod import Pod
from kopf_scheduler.model.pod_volumes import EPHEMERAL, PERSISTENT_VOLUME_CLAIM, PodVolume
from kopf_scheduler.model.storage import CSINode, PersistentVolumeClaim, VolumeAttachment
from kopf_scheduler.plugins.csi_translation import (
    InTreePlugin,
    TranslationError,
    csi_volume_handle,
    is_counted_as_migrated,
    plugin_for_source,
    plugin_named,
)

VOLUME_ID_PREFIX_LENGTH = 32
_VOLUME_ID_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""The characters of the random prefix (upstream's random-string alphabet)."""

AttachableVolumes = dict[str, str]
"""``<driver>/<volume handle>`` -> driver, one entry per distinct volume."""

Read = tuple[str, str]
"""A storage object a count read: (kind, key), the kinds of :mod:`kopf_scheduler.plugin_api`."""

MIGRATION_READ: Read = (api.CSI_NODE_KIND, "")
"""The count depended on whether the node counts an in-tree plugin as migrated (its CSINode)."""


class ClaimNotFoundError(Exception):
    """The incoming pod's claim does not exist: nothing but creating it helps."""

    def __init__(self, namespace: str, name: str) -> None:
        super().__init__(
            f'looking up PVC {namespace}/{name}: persistentvolumeclaim "{name}" not found'
        )


class CountingError(Exception):
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


def unique_name(driver: str, volume_handle: str) -> str:
    return f"{driver}/{volume_handle}"


def uses_claim(volume: PodVolume) -> bool:
    return volume.source_kind in (PERSISTENT_VOLUME_CLAIM, EPHEMERAL)


def may_need_attaching(volume: PodVolume) -> bool:
    """A claim, or an inline volume of an in-tree plugin that has a CSI driver."""
    return uses_claim(volume) or plugin_for_source(volume.source_kind) is not None


def _controlled_by(claim: PersistentVolumeClaim, pod: Pod) -> bool:
    return claim.namespace == pod.namespace and claim.controller_uid == pod.uid


def _migrated(csi_node: CSINode | None, plugin: InTreePlugin, reads: set[Read] | None) -> bool:
    if reads is not None and plugin.volume_handle is not None:
        reads.add(MIGRATION_READ)
    return is_counted_as_migrated(csi_node, plugin)


class VolumeCounter:
    """Counts against the storage objects of one scheduler (read through its handle, since
    the handle's cache may be swapped before the first cycle)."""

    def __init__(self, handle: api.Handle, volume_id_prefix: str) -> None:
        self._handle = handle
        self._volume_id_prefix = volume_id_prefix

    def collect(
        self,
        pod: Pod,
        csi_node: CSINode | None,
        into: AttachableVolumes,
        *,
        incoming: bool,
        reads: set[Read] | None = None,
    ) -> None:
        """Add ``pod``'s countable volumes to ``into`` (and what was read to ``reads``).

        Raises ClaimNotFoundError for a missing claim of the ``incoming`` pod (other pods'
        missing claims are skipped) and CountingError for a foreign ephemeral claim or an
        inline volume that cannot be translated.
        """
        storage = self._handle.storage
        for volume in pod.volumes:
            if not uses_claim(volume):
                self._collect_inline(volume, csi_node, into, reads)
                continue
            key = f"{pod.namespace}/{volume.claim_name}"
            if reads is not None:
                reads.add((api.CLAIM_KIND, key))
            claim = storage.claims.get_api_object(key)
            if claim is None:
                if incoming:
                    raise ClaimNotFoundError(pod.namespace, volume.claim_name)
                continue
            if volume.is_ephemeral and not _controlled_by(claim, pod):
                raise CountingError(
                    f"PVC {claim.namespace}/{claim.name} was not created for pod "
                    f"{pod.namespace}/{pod.name} (pod is not owner)"
                )
            driver, volume_handle = self._claim_volume(claim, csi_node, reads)
            if driver and volume_handle:
                into[unique_name(driver, volume_handle)] = driver

    @staticmethod
    def _collect_inline(
        volume: PodVolume,
        csi_node: CSINode | None,
        into: AttachableVolumes,
        reads: set[Read] | None,
    ) -> None:
        plugin = plugin_for_source(volume.source_kind)
        if plugin is None or not _migrated(csi_node, plugin, reads):
            return
        try:
            volume_handle = csi_volume_handle(plugin, volume.source, {})
        except TranslationError as error:
            raise CountingError(
                f"converting volume({volume.name}) from inline to csi: {error}"
            ) from error
        if volume_handle is not None:
            into[unique_name(plugin.driver, volume_handle)] = plugin.driver

    def _claim_volume(
        self, claim: PersistentVolumeClaim, csi_node: CSINode | None, reads: set[Read] | None
    ) -> tuple[str, str]:
        """The driver and volume handle of the claim's volume; empty strings: not counted."""
        if not claim.volume_name:
            return self._class_volume(claim, csi_node, reads)
        if reads is not None:
            reads.add((api.VOLUME_KIND, claim.volume_name))
        volume = self._handle.storage.volumes.get_api_object(claim.volume_name)
        if volume is None:
            return self._class_volume(claim, csi_node, reads)
        if volume.csi is not None:
            return volume.csi.driver, volume.csi.volume_handle
        if volume.in_tree_source is None:
            return "", ""
        source_kind, source = volume.in_tree_source
        plugin = plugin_for_source(source_kind)
        if plugin is None or not _migrated(csi_node, plugin, reads):
            return "", ""
        try:
            volume_handle = csi_volume_handle(plugin, source, volume.labels)
        except TranslationError:
            return "", ""
        return plugin.driver, volume_handle or ""

    def _class_volume(
        self, claim: PersistentVolumeClaim, csi_node: CSINode | None, reads: set[Read] | None
    ) -> tuple[str, str]:
        """A claim without a known PV counts under its class's provisioner."""
        if not claim.storage_class_name:
            return "", ""
        if reads is not None:
            reads.add((api.STORAGE_CLASS_KIND, claim.storage_class_name))
        storage_class = self._handle.storage.storage_class(claim.storage_class_name)
        if storage_class is None:
            return "", ""
        volume_handle = f"{self._volume_id_prefix}-{claim.namespace}/{claim.name}"
        plugin = plugin_named(storage_class.provisioner)
        if plugin is None:
            return storage_class.provisioner, volume_handle
        if not _migrated(csi_node, plugin, reads):
            return "", ""
        return plugin.driver, volume_handle

    def count_node(
        self,
        pods: Iterable[Pod],
        csi_node: CSINode | None,
        attachments: Iterable[VolumeAttachment],
        reads: set[Read] | None = None,
    ) -> tuple[AttachableVolumes, Counter[str]]:
        """The volumes a node's ``pods`` use, and the node's attached count per driver: those
        volumes plus the distinct volumes its ``attachments`` (of known CSI PVs) name that are
        not among them (two attachments of one volume count once).

        Raises CountingError for a pod whose volumes cannot be counted.
        """
        in_use: AttachableVolumes = {}
        for pod in pods:
            self.collect(pod, csi_node, in_use, incoming=False, reads=reads)
        attached = Counter(in_use.values())
        counted = set(in_use)
        for attachment in attachments:
            found = self._attached_volume(attachment, reads)
            if found is not None and found[0] not in counted:
                counted.add(found[0])
                attached[found[1]] += 1
        return in_use, attached

    def _attached_volume(
        self, attachment: VolumeAttachment, reads: set[Read] | None
    ) -> tuple[str, str] | None:
        """(unique name, driver) of an attachment of a known CSI PV; ``None``: not counted."""
        if not attachment.attacher or not attachment.persistent_volume_name:
            return None
        if reads is not None:
            reads.add((api.VOLUME_KIND, attachment.persistent_volume_name))
        volume = self._handle.storage.volumes.get_api_object(attachment.persistent_volume_name)
        if volume is None or volume.csi is None:
            return None
        return unique_name(attachment.attacher, volume.csi.volume_handle), attachment.attacher

    def attachments_on(self, node_name: str) -> list[VolumeAttachment]:
        """The node's VolumeAttachments, found among all of them."""
        return [
            attachment
            for attachment in self._handle.storage.attachments.values()
            if attachment.node_name == node_name
        ]


def exceeds(
    new_volumes: AttachableVolumes,
    in_use: Set[str],
    attached: Mapping[str, int],
    limits: Mapping[str, int],
) -> bool:
    """Whether the incoming pod's volumes not already in use on the node take some driver past
    its limit, given the volumes the node has attached per driver."""
    wanted: dict[str, int] = {}
    for name, driver in new_volumes.items():
        if name not in in_use:
            wanted[driver] = wanted.get(driver, 0) + 1
    for driver, count in wanted.items():
        limit = limits.get(driver)
        if limit is not None and attached.get(driver, 0) + count > limit:
            return True
    return False
