"""Per-node counts of the pods that satisfy a predicate, kept in step with the node mirror.

PodTopologySpread counts, on every node, the pods its selector matches; InterPodAffinity counts
the pods an incoming pod's affinity terms select. Recounting every pod of the cluster at every
attempt is what makes those plugins slow on large clusters, while consecutive attempts ask about
the same few predicates (the pods of one workload carry the same constraints and terms) and
change the pods of one node at a time. So each predicate, named by a hashable key that captures
everything it depends on, gets an integer column over the mirror's node positions: counted in
full when first asked for, then recounted only on the rows the mirror reports replaced. A layout
rebuild drops every column, and columns not asked for recently are dropped first when there are
more than :data:`COLUMN_LIMIT`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from kopf_scheduler.framework.node_columns.mirror import IntArray, NodeMirror

if TYPE_CHECKING:
    from kopf_scheduler.cache.node_info import NodeInfo
    from kopf_scheduler.model.pod import Pod

PodPredicate = Callable[["Pod"], bool]

COLUMN_LIMIT = 64
"""Columns kept at most; each costs eight bytes per node."""


def _count(info: NodeInfo, predicate: PodPredicate) -> int:
    return sum(1 for pod in info.pods if predicate(pod))


class _Column:
    __slots__ = ("counts", "predicate", "stale")

    def __init__(self, counts: IntArray, predicate: PodPredicate) -> None:
        self.counts = counts
        self.predicate = predicate
        self.stale: set[int] = set()
        """Positions whose NodeInfo was replaced since they were counted."""


class PodCounts:
    """Count columns over one :class:`NodeMirror`'s positions."""

    def __init__(self, mirror: NodeMirror) -> None:
        self._mirror = mirror
        self._columns: OrderedDict[Hashable, _Column] = OrderedDict()
        mirror.subscribe(self)

    def column(self, key: Hashable, predicate: PodPredicate) -> IntArray:
        """How many pods on each node satisfy ``predicate`` (which ``key`` stands for).

        The array is the cached column: read it before the mirror syncs again, never write it.
        """
        infos = self._mirror.infos
        entry = self._columns.get(key)
        if entry is None:
            counts = np.fromiter(
                (_count(info, predicate) for info in infos), dtype=np.int64, count=len(infos)
            )
            entry = self._columns[key] = _Column(counts, predicate)
            if len(self._columns) > COLUMN_LIMIT:
                self._columns.popitem(last=False)
            return counts
        self._columns.move_to_end(key)
        if entry.stale:
            counts = entry.counts
            for position in entry.stale:
                counts[position] = _count(infos[position], entry.predicate)
            entry.stale.clear()
        return entry.counts

    # RowListener ---------------------------------------------------------------------------------

    def rows_replaced(self, positions: Sequence[int]) -> None:
        for entry in self._columns.values():
            entry.stale.update(positions)

    def layout_rebuilt(self) -> None:
        self._columns.clear()
