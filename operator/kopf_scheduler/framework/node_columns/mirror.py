"""Column arrays mirroring a snapshot's node list, kept in step with it incrementally.

Every vectorised filter and score reads these columns instead of walking NodeInfo objects. A
column holds one value per position of ``snapshot.node_info_list``: allocatable and requested
amounts, the pod count, the unschedulable flag, an id for the node's set of taints, and (made on
first use) the interned value of any node label a pod selects on and the allocatable and free
amounts of any scalar resource (an extended resource, say) a pod requests. Images get an
inverted index (image name -> the nodes listing it), rebuilt only when some node's image list
changes.

The snapshot tells what changed: ``layout_version`` moves when the node list is rebuilt, and
``changed_nodes`` names the nodes replaced in place, so a refresh costs time proportional to the
change. Negative amounts or amounts beyond :data:`SAFE_LIMIT` (never seen in real clusters) mark
the mirror unsafe and the caller falls back to the per-node path, which keeps the vectorised
arithmetic exact (no overflow, exact float conversions, no negative-operand division).

Indexes derived from the nodes' pods (:mod:`.pod_counts`, :mod:`.term_census`) subscribe as
:class:`RowListener` and hear which positions were replaced, or that all of them were.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    from kopf_scheduler.cache.node_info import ImageState, NodeInfo
    from kopf_scheduler.cache.snapshot import Snapshot
    from kopf_scheduler.model.node import Node
    from kopf_scheduler.model.taints import Taint

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]
FloatArray = npt.NDArray[np.float64]

SAFE_LIMIT = 2**50
"""Largest magnitude of any mirrored amount: products by 100 and float conversions stay exact."""

NODE_NAME_FIELD = "metadata.name"

_INT_COLUMNS = (
    "alloc_cpu",
    "alloc_mem",
    "alloc_eph",
    "alloc_pods",
    "req_cpu",
    "req_mem",
    "req_eph",
    "nz_cpu",
    "nz_mem",
    "pod_count",
    "free_cpu",
    "free_mem",
    "free_eph",
    "free_pods",
    "taint_id",
)


class RowListener(Protocol):
    """An index kept in step with the mirror's rows."""

    def rows_replaced(self, positions: Sequence[int]) -> None:
        """The NodeInfos at ``positions`` were replaced (their pods may have changed)."""

    def layout_rebuilt(self) -> None:
        """Every position may now hold a different node."""


LabelPair = tuple[str, str]
"""(label key, label value)."""


class LabelColumn:
    """One label key: each node's value as a small integer (-1 when the node lacks the key)."""

    __slots__ = ("_pair_codes", "_pairs", "codes", "key", "names", "values")

    def __init__(self, key: str, size: int) -> None:
        self.key = key
        self.values: dict[str, int] = {}
        self.names: list[str] = []
        """The value of each code (codes are never reused)."""
        self.codes: IntArray = np.full(size, -1, dtype=np.int64)
        self._pairs: list[LabelPair] = []
        self._pair_codes: dict[LabelPair, int] = {}

    def intern(self, value: str | None) -> int:
        if value is None:
            return -1
        code = self.values.get(value)
        if code is None:
            code = self.values[value] = len(self.names)
            self.names.append(value)
        return code

    def code_of(self, value: str) -> int | None:
        """The code of ``value``, or ``None`` when no node has ever carried it."""
        return self.values.get(value)

    def table(self, by_value: Mapping[str, int]) -> IntArray:
        """``by_value`` indexed by code, with one extra last slot (0) that code -1 indexes, so
        that ``table[codes]`` gives each node the number of its value (0 without the label);
        values no node carries are left out."""
        table = np.zeros(len(self.names) + 1, dtype=np.int64)
        values = self.values
        for value, number in by_value.items():
            code = values.get(value)
            if code is not None:
                table[code] = number
        return table

    def pairs(self) -> tuple[list[LabelPair], dict[LabelPair, int]]:
        """The ``(key, value)`` pair of every code, and the code of every pair.

        Kept from one call to the next, so that turning per-code sums into per-pair counts, and
        back, runs without building a tuple or hashing a value per pair each time.
        """
        pairs = self._pairs
        names = self.names
        for code in range(len(pairs), len(names)):
            pair = (self.key, names[code])
            pairs.append(pair)
            self._pair_codes[pair] = code
        return pairs, self._pair_codes


class ScalarColumn:
    """One scalar resource (an extended resource, hugepages, ...): each node's allocatable and
    free amounts (0 where the node has none)."""

    __slots__ = ("allocatable", "free", "name", "unsafe")

    def __init__(self, name: str, size: int) -> None:
        self.name = name
        self.allocatable: IntArray = np.zeros(size, dtype=np.int64)
        self.free: IntArray = np.zeros(size, dtype=np.int64)
        self.unsafe: set[int] = set()
        """Positions whose amounts lie outside ``[0, SAFE_LIMIT)`` (held as 0 here)."""

    def set_row(self, index: int, info: NodeInfo) -> None:
        allocatable = info.allocatable.scalar.get(self.name, 0)
        requested = info.requested.scalar.get(self.name, 0)
        if 0 <= allocatable < SAFE_LIMIT and 0 <= requested < SAFE_LIMIT:
            self.unsafe.discard(index)
        else:
            self.unsafe.add(index)
            allocatable = requested = 0
        self.allocatable[index] = allocatable
        self.free[index] = allocatable - requested


class NodeMirror:
    """Per-position columns of one snapshot's node list."""

    def __init__(self) -> None:
        self.snapshot: Snapshot | None = None
        self.layout_version = -1
        self.size = 0
        self.infos: list[NodeInfo] = []
        self.names: list[str] = []
        self.position: dict[str, int] = {}
        self._nodes: list[Node | None] = []
        self._image_states: list[Mapping[str, ImageState] | None] = []
        self._unsafe: set[int] = set()
        self.alloc_cpu: IntArray = np.zeros(0, dtype=np.int64)
        self.alloc_mem: IntArray = np.zeros(0, dtype=np.int64)
        self.alloc_eph: IntArray = np.zeros(0, dtype=np.int64)
        self.alloc_pods: IntArray = np.zeros(0, dtype=np.int64)
        self.req_cpu: IntArray = np.zeros(0, dtype=np.int64)
        self.req_mem: IntArray = np.zeros(0, dtype=np.int64)
        self.req_eph: IntArray = np.zeros(0, dtype=np.int64)
        self.nz_cpu: IntArray = np.zeros(0, dtype=np.int64)
        self.nz_mem: IntArray = np.zeros(0, dtype=np.int64)
        self.pod_count: IntArray = np.zeros(0, dtype=np.int64)
        self.free_cpu: IntArray = np.zeros(0, dtype=np.int64)
        """Allocatable minus requested (likewise for memory, ephemeral storage and pods)."""
        self.free_mem: IntArray = np.zeros(0, dtype=np.int64)
        self.free_eph: IntArray = np.zeros(0, dtype=np.int64)
        self.free_pods: IntArray = np.zeros(0, dtype=np.int64)
        self.taint_id: IntArray = np.zeros(0, dtype=np.int64)
        self.unschedulable: BoolArray = np.zeros(0, dtype=np.bool_)
        self.taint_sets: list[tuple[Taint, ...]] = []
        """Distinct taint lists by id; ids are never reused, so per-id results stay valid."""
        self._taint_ids: dict[tuple[tuple[str, str, str], ...], int] = {}
        self._labels: dict[str, LabelColumn] = {}
        self._scalars: dict[str, ScalarColumn] = {}
        self._image_index: dict[str, list[tuple[ImageState, IntArray]]] | None = None
        self._listeners: list[RowListener] = []

    def subscribe(self, listener: RowListener) -> None:
        """Tell ``listener`` about every row replaced or rebuilt from now on."""
        self._listeners.append(listener)

    # Refreshing --------------------------------------------------------------------------------

    @property
    def safe(self) -> bool:
        """Whether every mirrored amount is small enough for exact vectorised arithmetic."""
        return not self._unsafe

    def sync(self, snapshot: Snapshot) -> None:
        """Bring the columns up to date with ``snapshot``."""
        infos = snapshot.node_info_list
        if (
            snapshot is not self.snapshot
            or snapshot.layout_version != self.layout_version
            or len(infos) != self.size
        ):
            self._rebuild(snapshot)
            return
        changed = snapshot.changed_nodes
        if not changed:
            return
        position = self.position
        replaced: list[int] = []
        for name in changed:
            index = position.get(name)
            if index is None or infos[index].name != name:
                self._rebuild(snapshot)
                return
            self._set_row(index, infos[index])
            replaced.append(index)
        changed.clear()
        for listener in self._listeners:
            listener.rows_replaced(replaced)

    def _rebuild(self, snapshot: Snapshot) -> None:
        infos = snapshot.node_info_list
        size = len(infos)
        self.snapshot = snapshot
        self.layout_version = snapshot.layout_version
        self.size = size
        self.infos = list(infos)
        self.names = [info.name for info in infos]
        self.position = {name: index for index, name in enumerate(self.names)}
        self._nodes = [None] * size
        self._image_states = [None] * size
        self._unsafe = set()
        for column in _INT_COLUMNS:
            setattr(self, column, np.zeros(size, dtype=np.int64))
        self.unschedulable = np.zeros(size, dtype=np.bool_)
        for key in self._labels:
            self._labels[key] = LabelColumn(key, size)
        for name in self._scalars:
            self._scalars[name] = ScalarColumn(name, size)
        self._image_index = None
        for index, info in enumerate(infos):
            self._set_row(index, info)
        snapshot.changed_nodes.clear()
        for listener in self._listeners:
            listener.layout_rebuilt()

    def _set_row(self, index: int, info: NodeInfo) -> None:
        self.infos[index] = info
        allocatable = info.allocatable
        requested = info.requested
        non_zero = info.non_zero_requested
        values = (
            allocatable.milli_cpu,
            allocatable.memory,
            allocatable.ephemeral_storage,
            allocatable.allowed_pod_number,
            requested.milli_cpu,
            requested.memory,
            requested.ephemeral_storage,
            non_zero.milli_cpu,
            non_zero.memory,
        )
        if all(0 <= value < SAFE_LIMIT for value in values):
            self._unsafe.discard(index)
        else:
            self._unsafe.add(index)
            values = (0, 0, 0, 0, 0, 0, 0, 0, 0)
        (
            self.alloc_cpu[index],
            self.alloc_mem[index],
            self.alloc_eph[index],
            self.alloc_pods[index],
            self.req_cpu[index],
            self.req_mem[index],
            self.req_eph[index],
            self.nz_cpu[index],
            self.nz_mem[index],
        ) = values
        pod_count = len(info.pods)
        self.pod_count[index] = pod_count
        self.free_cpu[index] = values[0] - values[4]
        self.free_mem[index] = values[1] - values[5]
        self.free_eph[index] = values[2] - values[6]
        self.free_pods[index] = values[3] - pod_count
        for scalar in self._scalars.values():
            scalar.set_row(index, info)
        node = info.node
        if node is not self._nodes[index]:
            self._nodes[index] = node
            self._set_static(index, node)
        if info.image_states is not self._image_states[index]:
            self._image_states[index] = info.image_states
            self._image_index = None

    def _set_static(self, index: int, node: Node | None) -> None:
        if node is None:
            self.unschedulable[index] = False
            self.taint_id[index] = self._taint_set_id(())
            labels: Mapping[str, str] = {}
        else:
            self.unschedulable[index] = node.unschedulable
            self.taint_id[index] = self._taint_set_id(node.taints)
            labels = node.labels
        for key, column in self._labels.items():
            column.codes[index] = column.intern(labels.get(key))

    def _taint_set_id(self, taints: tuple[Taint, ...]) -> int:
        signature = tuple((t.key, t.value, t.effect) for t in taints)
        taint_id = self._taint_ids.get(signature)
        if taint_id is None:
            taint_id = self._taint_ids[signature] = len(self.taint_sets)
            self.taint_sets.append(taints)
        return taint_id

    # Lookups ---------------------------------------------------------------------------------

    def labels(self, key: str) -> LabelColumn:
        """The column of label ``key``, made from every node's labels on first use."""
        column = self._labels.get(key)
        if column is None:
            column = self._labels[key] = LabelColumn(key, self.size)
            codes = column.codes
            for index, node in enumerate(self._nodes):
                if node is not None:
                    codes[index] = column.intern(node.labels.get(key))
        return column

    def scalar(self, name: str) -> ScalarColumn:
        """The column of scalar resource ``name``, made from every node on first use."""
        column = self._scalars.get(name)
        if column is None:
            column = self._scalars[name] = ScalarColumn(name, self.size)
            for index, info in enumerate(self.infos):
                column.set_row(index, info)
        return column

    def image_index(self) -> dict[str, list[tuple[ImageState, IntArray]]]:
        """Image name -> groups of node positions that share one ImageState for it."""
        if self._image_index is None:
            groups: dict[str, dict[int, tuple[ImageState, list[int]]]] = {}
            for index, states in enumerate(self._image_states):
                if not states:
                    continue
                for name, state in states.items():
                    by_state = groups.setdefault(name, {})
                    entry = by_state.get(id(state))
                    if entry is None:
                        by_state[id(state)] = (state, [index])
                    else:
                        entry[1].append(index)
            self._image_index = {
                name: [
                    (state, np.array(positions, dtype=np.int64)) for state, positions in by.values()
                ]
                for name, by in groups.items()
            }
        return self._image_index
