"""What a plugin's batch Filter and Score read: the node columns of one scheduler's snapshot.

:class:`NodeColumns` bundles the mirror of the node list (:mod:`.mirror`), the per-node pod
counts (:mod:`.pod_counts`) and the census of existing pods' affinity terms (:mod:`.term_census`)
with the node masks that several plugins evaluate alike: a pod's node selector and required node
affinity, and the taints it does not tolerate. Tables computed per set of node taints are
memoised per toleration list, since pods of one workload tolerate the same taints.

The scheduler offers its columns to an attempt under :data:`NODE_COLUMNS_KEY` in the cycle
state, so that PreFilter and PreScore can count pods from them instead of walking every node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from kopf_scheduler.framework.cycle_state import StateKey
from kopf_scheduler.framework.node_columns.fallback import Fallback
from kopf_scheduler.framework.node_columns.free_capacity import FreeColumns
from kopf_scheduler.framework.node_columns.mirror import NODE_NAME_FIELD, BoolArray, NodeMirror
from kopf_scheduler.framework.node_columns.pod_counts import PodCounts
from kopf_scheduler.framework.node_columns.term_census import TermCensus
from kopf_scheduler.model.selectors import (
    DOES_NOT_EXIST,
    EXISTS,
    IN,
    NOT_IN,
    NodeSelectorTerm,
    Requirement,
)
from kopf_scheduler.model.taints import (
    NO_EXECUTE,
    NO_SCHEDULE,
    Taint,
    Toleration,
    find_untolerated_taint,
)

if TYPE_CHECKING:
    from kopf_scheduler.cache.node_info import NodeInfo
    from kopf_scheduler.model.pod import Pod

TolerationSignature = tuple[tuple[str, str, str, str], ...]

_DO_NOT_SCHEDULE_EFFECTS = frozenset({NO_SCHEDULE, NO_EXECUTE})
_TOLERATION_CACHE_LIMIT = 256
_UNTOLERATED = "untolerated NoSchedule or NoExecute"


def _toleration_signature(tolerations: tuple[Toleration, ...]) -> TolerationSignature:
    return tuple((t.key, t.operator, t.value, t.effect) for t in tolerations)


class NodeColumns:
    """The columns, indexes and shared masks over one scheduler's node list."""

    def __init__(self) -> None:
        self.mirror = NodeMirror()
        self.pod_counts = PodCounts(self.mirror)
        self.census = TermCensus(self.mirror)
        self._taint_tables: dict[str, dict[TolerationSignature, Any]] = {}

    def serves(self, nodes: Sequence[NodeInfo]) -> bool:
        """Whether ``nodes`` is the node list the mirror follows (brought up to date)."""
        snapshot = self.mirror.snapshot
        if snapshot is None or nodes is not snapshot.node_info_list:
            return False
        self.mirror.sync(snapshot)
        return True

    def free_columns(self) -> FreeColumns:
        """Free capacity per node, without nominated pods."""
        mirror = self.mirror
        return FreeColumns(mirror.free_cpu, mirror.free_mem, mirror.free_eph, mirror.free_pods)

    # Taints --------------------------------------------------------------------------------------

    def per_taint_set(
        self,
        table: str,
        tolerations: tuple[Toleration, ...],
        evaluate: Callable[[tuple[Taint, ...], tuple[Toleration, ...]], Any],
        dtype: Any,
    ) -> Any:
        """``evaluate(taints, tolerations)`` for every known taint set, indexed by taint set id.

        Memoised per ``table`` name and toleration list; taint set ids are never reused, so a
        memoised table only needs extending.
        """
        cache = self._taint_tables.setdefault(table, {})
        taint_sets = self.mirror.taint_sets
        key = _toleration_signature(tolerations)
        values = cache.get(key)
        if values is None or len(values) < len(taint_sets):
            known = 0 if values is None else len(values)
            extra = np.array(
                [evaluate(taints, tolerations) for taints in taint_sets[known:]], dtype=dtype
            )
            values = extra if values is None else np.concatenate((values, extra))
            if len(cache) >= _TOLERATION_CACHE_LIMIT:
                cache.clear()
            cache[key] = values
        return values

    def untolerated_mask(self, pod: Pod) -> BoolArray | None:
        """The nodes with a NoSchedule or NoExecute taint ``pod`` does not tolerate, or
        ``None`` when there are none."""
        table = self.per_taint_set(
            _UNTOLERATED,
            pod.tolerations,
            lambda taints, tolerations: (
                find_untolerated_taint(taints, tolerations, _DO_NOT_SCHEDULE_EFFECTS) is not None
            ),
            np.bool_,
        )
        if not table.any():
            return None
        result: BoolArray = table[self.mirror.taint_id]
        return result

    # Node selection ------------------------------------------------------------------------------

    def pod_node_affinity_mask(self, pod: Pod) -> BoolArray:
        """The nodes matching ``pod``'s ``nodeSelector`` and one of the terms of its required
        node affinity (all of them, malformed ones too)."""
        required = pod.node_affinity_required
        return self.selector_mask(pod.node_selector, None if required is None else required.terms)

    def selector_mask(
        self, node_selector: Mapping[str, str], terms: Sequence[NodeSelectorTerm] | None
    ) -> BoolArray:
        """The nodes with every ``node_selector`` label that match one of ``terms`` (when
        there are terms)."""
        mirror = self.mirror
        mask = np.ones(mirror.size, dtype=np.bool_)
        for key, value in node_selector.items():
            column = mirror.labels(key)
            code = column.code_of(value)
            if code is None:
                return np.zeros(mirror.size, dtype=np.bool_)
            mask &= column.codes == code
        if terms is None:
            return mask
        matched = np.zeros(mirror.size, dtype=np.bool_)
        for term in terms:
            matched |= self.term_mask(term)
        return mask & matched

    def term_mask(self, term: NodeSelectorTerm) -> BoolArray:
        """The nodes matching every requirement of ``term`` (none for an empty term)."""
        size = self.mirror.size
        if not term.label_requirements and not term.field_requirements:
            return np.zeros(size, dtype=np.bool_)
        mask = np.ones(size, dtype=np.bool_)
        for requirement in term.label_requirements:
            mask &= self.requirement_mask(requirement)
        for requirement in term.field_requirements:
            mask &= self._field_mask(requirement)
        return mask

    def requirement_mask(self, requirement: Requirement) -> BoolArray:
        """Which nodes' labels satisfy ``requirement`` (``Requirement.matches`` per node)."""
        column = self.mirror.labels(requirement.key)
        codes = column.codes
        operator = requirement.operator
        if operator in (IN, NOT_IN):
            known = [column.code_of(value) for value in requirement.values]
            wanted = [code for code in known if code is not None]
            if not wanted:
                hit = np.zeros(len(codes), dtype=np.bool_)
            elif len(wanted) == 1:
                hit = codes == wanted[0]
            else:
                hit = np.isin(codes, wanted)
            return hit if operator == IN else ~hit
        if operator == EXISTS:
            result: BoolArray = codes >= 0
            return result
        if operator == DOES_NOT_EXIST:
            result = codes < 0
            return result
        # Gt / Lt: evaluate once per distinct value; the last entry stands for "no such label".
        key = requirement.key
        table = [requirement.matches({key: value}) for value in column.names]
        table.append(requirement.matches({}))
        lookup: BoolArray = np.array(table, dtype=np.bool_)[codes]
        return lookup

    def _field_mask(self, requirement: Requirement) -> BoolArray:
        mirror = self.mirror
        if requirement.key != NODE_NAME_FIELD or requirement.operator not in (IN, NOT_IN):
            raise Fallback
        hit = np.zeros(mirror.size, dtype=np.bool_)
        for name in requirement.values:
            index = mirror.position.get(name)
            if index is not None:
                hit[index] = True
        return hit if requirement.operator == IN else ~hit


NODE_COLUMNS_KEY: StateKey[NodeColumns] = StateKey("NodeColumns")
"""Where the scheduler offers its :class:`NodeColumns` to the plugins of one attempt."""
