"""The attach counts of every node, kept between attempts for NodeVolumeLimits' batch form.

Counting a node walks its pods and looks each claim up in the storage cache; doing that for
every node on every attempt is most of the plugin's cost. The index keeps, per position of the
node mirror, what the Filter works out before it looks at the incoming pod: the volumes the
node's pods use, how many volumes of each driver the node has attached (those plus its
VolumeAttachments not among them), the node's limits, and whether one of its pods could not be
counted. Per driver, the attached counts and the limits are also kept as columns, so that one
comparison per driver answers for all nodes.

A node's entry holds until something it was worked out from changes:
- the node's row in the mirror is replaced (its pods changed) or the mirror is rebuilt;
- a claim, volume or class the count read changes as the API reports it (the storage cache's
  listeners hear it), or the node's CSINode, or one of its VolumeAttachments.

Stale entries are counted again when the batch form next asks, so a burst of storage events costs
one count per affected node.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from kopf_scheduler import plugin_api as api
from kopf_scheduler.model.storage import VolumeAttachment
from kopf_scheduler.plugins.node_volume_limits.counting import (
    AttachableVolumes,
    CountingError,
    Read,
    VolumeCounter,
    volume_limits,
)

NO_LIMIT = -1
"""In a limit column: the node sets no limit for the driver."""


class NodeVolumes:
    """One node's count."""

    __slots__ = ("attached", "failed", "in_use", "limits", "reads")

    def __init__(
        self,
        in_use: AttachableVolumes,
        attached: Counter[str],
        limits: dict[str, int],
        failed: bool,
        reads: set[Read],
    ) -> None:
        self.in_use = in_use
        self.attached = attached
        self.limits = limits
        self.failed = failed
        """A pod on the node holds a volume that cannot be counted (the Filter's Error)."""
        self.reads = reads


class NodeVolumeIndex:
    """Every node's :class:`NodeVolumes` over one mirror and one storage cache."""

    def __init__(
        self, mirror: api.NodeMirror, storage: api.StorageCache, counter: VolumeCounter
    ) -> None:
        self.mirror = mirror
        self.storage = storage
        self._counter = counter
        self._entries: list[NodeVolumes | None] = []
        self._stale: set[int] = set()
        self._rebuild = True
        self._readers: dict[Read, set[int]] = {}
        """Who read what: the positions to count again when a storage object changes."""
        self._users: dict[str, set[int]] = {}
        """Volume -> the positions where a pod uses it."""
        self._failed: set[int] = set()
        self.attached: dict[str, api.IntArray] = {}
        """Driver -> attached count per position."""
        self.limits: dict[str, api.IntArray] = {}
        """Driver -> limit per position (:data:`NO_LIMIT` where the node sets none)."""
        self._attachments: dict[str, dict[str, VolumeAttachment]] = {}
        """Node name -> its VolumeAttachments by name."""
        self._attachment_nodes: dict[str, str] = {}
        for key, attachment in storage.attachments.items():
            self._file_attachment(key, attachment)
        mirror.subscribe(self)
        storage.subscribe(self)

    # What changed ------------------------------------------------------------------------------

    def rows_replaced(self, positions: Sequence[int]) -> None:
        self._stale.update(positions)

    def layout_rebuilt(self) -> None:
        self._rebuild = True

    def storage_changed(self, kind: str, key: str) -> None:
        if kind == api.VOLUME_ATTACHMENT_KIND:
            self._stale_node(self._attachment_nodes.get(key))
            self._drop_attachment(key)
            attachment = self.storage.attachments.get(key)
            if attachment is not None:
                self._file_attachment(key, attachment)
                self._stale_node(attachment.node_name)
        elif kind == api.CSI_NODE_KIND:
            self._stale_node(key)
        else:
            readers = self._readers.get((kind, key))
            if readers:
                self._stale.update(readers)

    def _stale_node(self, node_name: str | None) -> None:
        if node_name is None:
            return
        position = self.mirror.position.get(node_name)
        if position is not None:
            self._stale.add(position)

    def _file_attachment(self, key: str, attachment: VolumeAttachment) -> None:
        self._attachments.setdefault(attachment.node_name, {})[key] = attachment
        self._attachment_nodes[key] = attachment.node_name

    def _drop_attachment(self, key: str) -> None:
        node_name = self._attachment_nodes.pop(key, None)
        if node_name is None:
            return
        on_node = self._attachments[node_name]
        del on_node[key]
        if not on_node:
            del self._attachments[node_name]

    # Reading -----------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Count again every node whose count may have changed."""
        if self._rebuild:
            self._reset()
        stale = self._stale
        while stale:
            self._count(stale.pop())

    def entry(self, position: int) -> NodeVolumes:
        found = self._entries[position]
        if found is None:
            raise LookupError(position)
        return found

    def users(self, volume: str) -> set[int]:
        """The positions where a pod uses ``volume``."""
        return self._users.get(volume, set())

    def failed_with_limits(self) -> bool:
        """Whether a node with limits has a pod whose volumes cannot be counted."""
        return any(self.entry(position).limits for position in self._failed)

    # Counting ----------------------------------------------------------------------------------

    def _reset(self) -> None:
        size = self.mirror.size
        self._entries = [None] * size
        self._readers.clear()
        self._users.clear()
        self._failed.clear()
        self.attached.clear()
        self.limits.clear()
        self._stale = set(range(size))
        self._rebuild = False

    def _count(self, position: int) -> None:
        self._forget(position)
        info = self.mirror.infos[position]
        node_name = info.name
        csi_node = self.storage.csi_node(node_name)
        reads: set[Read] = set()
        attachments = self._attachments.get(node_name, {}).values()
        try:
            in_use, attached = self._counter.count_node(info.pods, csi_node, attachments, reads)
            failed = False
        except CountingError:
            # Never read: a node with limits sends the attempt to the Filter, one without
            # rejects nothing.
            in_use, attached, failed = {}, Counter(), True
        limits = volume_limits(csi_node)
        entry = NodeVolumes(in_use, attached, limits, failed, reads)
        self._entries[position] = entry
        for read in reads:
            self._readers.setdefault(read, set()).add(position)
        for volume in in_use:
            self._users.setdefault(volume, set()).add(position)
        if failed:
            self._failed.add(position)
        for driver, count in attached.items():
            self._column(self.attached, driver, 0)[position] = count
        for driver, limit in limits.items():
            self._column(self.limits, driver, NO_LIMIT)[position] = limit

    def _forget(self, position: int) -> None:
        entry = self._entries[position]
        if entry is None:
            return
        self._entries[position] = None
        for read in entry.reads:
            readers = self._readers[read]
            readers.discard(position)
            if not readers:
                del self._readers[read]
        for volume in entry.in_use:
            users = self._users[volume]
            users.discard(position)
            if not users:
                del self._users[volume]
        self._failed.discard(position)
        for driver in entry.attached:
            self.attached[driver][position] = 0
        for driver in entry.limits:
            self.limits[driver][position] = NO_LIMIT

    def _column(self, columns: dict[str, api.IntArray], driver: str, fill: int) -> api.IntArray:
        column = columns.get(driver)
        if column is None:
            column = columns[driver] = np.full(self.mirror.size, fill, dtype=np.int64)
        return column
